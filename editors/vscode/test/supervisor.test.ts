import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Supervisor } from "../src/supervisor";

class FakeClient {
  static made = 0;
  readonly n = ++FakeClient.made;
  stopped = false;
  constructor(private readonly failStop = false) {}
  async stop(): Promise<void> {
    if (this.failStop) {
      throw new Error("Client is not running and can't be stopped. It's current state is: startFailed");
    }
    this.stopped = true;
  }
}

function supervisor(start: () => Promise<FakeClient | undefined>) {
  const reports: string[] = [];
  const s = new Supervisor<FakeClient>(start, (what, e) => reports.push(`${what}: ${e instanceof Error ? e.message : String(e)}`));
  return { s, reports };
}

describe("Supervisor", () => {
  it("stops nothing, without throwing, when nothing ever started", async () => {
    const { s, reports } = supervisor(async () => undefined);
    await s.dispose();
    const never = new Supervisor<FakeClient>(async () => new FakeClient(), () => undefined);
    await never.dispose();
    assert.equal(never.current, undefined);
    assert.deepEqual(reports, []);
  });

  it("stops nothing when the start found no server", async () => {
    const { s } = supervisor(async () => undefined);
    assert.equal(await s.ensureStarted(), undefined);
    await s.dispose();
  });

  it("reports a start that throws, and keeps nothing", async () => {
    const { s, reports } = supervisor(async () => {
      throw new Error("spawn ENOENT");
    });
    assert.equal(await s.ensureStarted(), undefined);
    assert.deepEqual(reports, ["starting the server: spawn ENOENT"]);
    await s.dispose();
  });

  it("swallows a stop that throws, reporting it", async () => {
    const { s, reports } = supervisor(async () => new FakeClient(true));
    await s.ensureStarted();
    await assert.doesNotReject(s.dispose());
    assert.equal(reports.length, 1);
    assert.match(reports[0] ?? "", /^stopping the server: Client is not running/);
  });

  it("restarts: stops the old client before starting the new one", async () => {
    const events: string[] = [];
    const { s } = supervisor(async () => {
      const c = new FakeClient();
      events.push(`start ${c.n}`);
      const stop = c.stop.bind(c);
      c.stop = async () => {
        events.push(`stop ${c.n}`);
        await stop();
      };
      return c;
    });
    const first = await s.ensureStarted();
    assert.equal(await s.ensureStarted(), first, "ensureStarted keeps a running client");
    const second = await s.restart();
    assert.notEqual(second, first);
    assert.equal(first?.stopped, true);
    assert.equal(s.current, second);
    await s.dispose();
    assert.equal(second?.stopped, true);
    assert.deepEqual(events, [`start ${first?.n}`, `stop ${first?.n}`, `start ${second?.n}`, `stop ${second?.n}`]);
  });

  it("runs overlapping restarts one after the other", async () => {
    let running = 0;
    let most = 0;
    const { s } = supervisor(async () => {
      running++;
      most = Math.max(most, running);
      await new Promise((r) => setTimeout(r, 5));
      running--;
      return new FakeClient();
    });
    const results = await Promise.all([s.restart(), s.restart(), s.restart()]);
    assert.equal(most, 1);
    assert.equal(results[0]?.stopped, true);
    assert.equal(results[1]?.stopped, true);
    assert.equal(results[2]?.stopped, false);
    await s.dispose();
  });

  it("starts nothing after dispose", async () => {
    let starts = 0;
    const { s } = supervisor(async () => {
      starts++;
      return new FakeClient();
    });
    const disposed = s.dispose();
    await s.restart();
    await disposed;
    assert.equal(starts, 0);
    assert.equal(s.current, undefined);
  });
});
