import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, it } from "node:test";
import {
  CLIENT_SETTING_KEYS,
  LIVE_SETTINGS,
  PLACEMENTS,
  RESTART_SETTINGS,
  SERVER_SETTING_DEFAULTS,
  SERVER_SETTING_KEYS,
  didChangeConfigurationSettings,
  explainArgs,
  initializationOptions,
  readExtraEnv,
  readServerSettings,
  runFor,
} from "../src/settings";
import { REPO_DIR, manifest } from "./helpers";

const reader = (values: Record<string, unknown>) => (key: string) => values[key];

describe("settings → initializationOptions", () => {
  it("passes valid values through, as the three keys posh-lsp reads", () => {
    const s = readServerSettings(reader({ maxMovedBytes: 5_000, copiesPerMount: 4, placement: "greedy", other: 1 }));
    assert.deepEqual(initializationOptions(s), { maxMovedBytes: 5_000, copiesPerMount: 4, placement: "greedy", run: [] });
    assert.deepEqual(Object.keys(initializationOptions(s)).sort(), [...SERVER_SETTING_KEYS].sort());
  });

  it("sends the defaults for settings nobody set", () => {
    assert.deepEqual(initializationOptions(readServerSettings(reader({}))), {
      maxMovedBytes: 100_000_000,
      copiesPerMount: 1,
      placement: "cost-based",
      run: [],
    });
  });

  it("replaces values posh-lsp would ignore by the defaults", () => {
    const bad = [
      { maxMovedBytes: -1, copiesPerMount: 0, placement: "fastest" },
      { maxMovedBytes: "100", copiesPerMount: "2", placement: 3 },
      { maxMovedBytes: Number.NaN, copiesPerMount: Number.POSITIVE_INFINITY, placement: null },
      { maxMovedBytes: 1e300, copiesPerMount: -3, placement: "Greedy", run: {} },
      { run: [{ args: ["x"] }, { script: "a.sh", args: "x" }, { script: "a.sh", env: { A: 1 } }, null, "a.sh"] },
    ];
    for (const values of bad) {
      assert.deepEqual(readServerSettings(reader(values)), SERVER_SETTING_DEFAULTS, JSON.stringify(values));
    }
  });

  it("makes whole numbers of fractions, as the server reads unsigned integers", () => {
    const s = readServerSettings(reader({ maxMovedBytes: 1500.7, copiesPerMount: 2.9 }));
    assert.equal(s.maxMovedBytes, 1500);
    assert.equal(s.copiesPerMount, 2);
    assert.equal(JSON.stringify(initializationOptions(s)), '{"maxMovedBytes":1500,"copiesPerMount":2,"placement":"cost-based","run":[]}');
    assert.equal(readServerSettings(reader({ maxMovedBytes: 0 })).maxMovedBytes, 0);
  });

  it("nests a configuration change under posh", () => {
    const s = readServerSettings(reader({ placement: "greedy" }));
    assert.deepEqual(didChangeConfigurationSettings(s), {
      posh: { maxMovedBytes: 100_000_000, copiesPerMount: 1, placement: "greedy", run: [] },
    });
  });

  it("gives posh-exec the same placement and copies, the options before the script", () => {
    const s = readServerSettings(reader({ placement: "greedy", copiesPerMount: 3 }));
    assert.deepEqual(explainArgs(s, "/w/run.sh"), [
      "--explain",
      "--format",
      "dot",
      "--placement",
      "greedy",
      "--copies-per-mount",
      "3",
      "/w/run.sh",
    ]);
    assert.equal(explainArgs(s, "-odd.sh").at(-1), "./-odd.sh");
  });

  it("gives posh-exec and posh-lsp a script's posh.run: its arguments after it", () => {
    const s = readServerSettings(
      reader({ run: [{ script: "jobs/count.sh", args: ["/mnt/a/x"], env: { LOGS: "/mnt/logs" } }, { script: "" }] }),
    );
    assert.deepEqual(s.run, [{ script: "jobs/count.sh", args: ["/mnt/a/x"], env: { LOGS: "/mnt/logs" } }]);
    assert.deepEqual(initializationOptions(s).run, s.run);
    const run = runFor(s, "/w/jobs/count.sh", "/w");
    assert.deepEqual(run?.env, { LOGS: "/mnt/logs" });
    assert.equal(runFor(s, "/w/other.sh", "/w"), undefined);
    assert.deepEqual(explainArgs(s, "/w/jobs/count.sh", run).slice(-2), ["/w/jobs/count.sh", "/mnt/a/x"]);
  });

  it("keeps only string values of posh.server.extraEnv", () => {
    assert.deepEqual(readExtraEnv({ A: "1", B: 2, C: null, "": "x", "D=E": "y", F: "" }), { A: "1", F: "" });
    assert.deepEqual(readExtraEnv(["A=1"]), {});
    assert.deepEqual(readExtraEnv(undefined), {});
    assert.deepEqual(readExtraEnv("A=1"), {});
  });
});

describe("package.json's settings", () => {
  const props = manifest().contributes.configuration.properties;

  it("are the server's three keys, posh.server.* and the client's own, nothing else", () => {
    const expected = [...SERVER_SETTING_KEYS, ...CLIENT_SETTING_KEYS].map((k) => `posh.${k}`).sort();
    assert.deepEqual(Object.keys(props).sort(), expected);
  });

  it("have the defaults and choices the code uses", () => {
    for (const key of SERVER_SETTING_KEYS) {
      assert.deepEqual(props[`posh.${key}`]?.default, SERVER_SETTING_DEFAULTS[key], key);
    }
    assert.deepEqual(props["posh.placement"]?.enum, [...PLACEMENTS]);
    assert.equal(props["posh.copiesPerMount"]?.minimum, 1);
    assert.equal(props["posh.server.path"]?.default, "posh-lsp");
    assert.equal(props["posh.exec.path"]?.default, "posh-exec");
  });

  it("name only real settings in the restart and live lists", () => {
    for (const key of [...RESTART_SETTINGS, ...LIVE_SETTINGS]) {
      assert.ok(key in props, key);
    }
  });

  it("match what posh-lsp reads (posh-lsp/src/ide/world.rs)", (t) => {
    const world = path.join(REPO_DIR, "posh-lsp", "src", "ide", "world.rs");
    if (!fs.existsSync(world)) {
      t.skip(`${world} not found: not in a posh checkout`);
      return;
    }
    const source = fs.readFileSync(world, "utf8");
    const update = source.slice(source.indexOf("pub fn update"));
    // The server's list of the options `update` reads (`Settings::OPTIONS`).
    const options = /const OPTIONS: \[&str; \d+\] = \[([^\]]*)\]/.exec(source)?.[1] ?? "";
    const read = [...options.matchAll(/"([A-Za-z]+)"/g)].map((m) => m[1]);
    assert.deepEqual([...new Set(read)].sort(), [...SERVER_SETTING_KEYS].sort());
    for (const placement of PLACEMENTS) {
      assert.ok(update.includes(`Some("${placement}")`), `the server does not read placement ${placement}`);
    }
    const maxDefault = /max_moved_bytes:\s*([0-9_]+)/.exec(source)?.[1];
    assert.equal(Number(maxDefault?.replace(/_/g, "")), SERVER_SETTING_DEFAULTS.maxMovedBytes);
    assert.match(update, /filter\(\|&n\| n >= 1\)/, "copiesPerMount's lower bound changed");
  });
});
