import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, it } from "node:test";
import { findOnPath, nodeHost } from "../src/discovery";
import { computePlan, type PlanRequest } from "../src/plan";
import { runProcess, type RunOptions, type RunResult, type Runner } from "../src/process";
import { SERVER_SETTING_DEFAULTS } from "../src/settings";
import { builtProgram, tempDir, writeScript } from "./helpers";

const DOT = 'digraph posh {\n  p0n0 [label="cat a.txt"];\n}\n';

interface Call {
  program: string;
  args: readonly string[];
  options: RunOptions;
}

function fakeRunner(results: Record<string, Partial<RunResult>>): { run: Runner; calls: Call[] } {
  const calls: Call[] = [];
  const run: Runner = async (program, args, options) => {
    calls.push({ program, args, options });
    const r = results[program];
    if (r === undefined) {
      throw new Error(`unexpected program ${program}`);
    }
    return { code: 0, signal: null, stdout: "", stderr: "", ...r };
  };
  return { run, calls };
}

const request = (over: Partial<PlanRequest> = {}): PlanRequest => ({
  execPath: "/bin/posh-exec",
  dotPath: "/usr/bin/dot",
  script: "/w/s.sh",
  cwd: "/w",
  settings: { ...SERVER_SETTING_DEFAULTS, placement: "greedy" },
  ...over,
});

describe("computePlan", () => {
  it("plans a script with its posh.run: arguments after it, variables in posh-exec's environment", async () => {
    const { run, calls } = fakeRunner({ "/bin/posh-exec": { stdout: DOT }, "/usr/bin/dot": { stdout: "<svg></svg>" } });
    const settings = { ...SERVER_SETTING_DEFAULTS, run: [{ script: "s.sh", args: ["/mnt/a/x"], env: { IN: "/mnt/a/y" } }] };
    await computePlan(request({ settings, env: { PATH: "/bin" } }), run);
    assert.deepEqual(calls[0]?.args.slice(-2), ["/w/s.sh", "/mnt/a/x"]);
    assert.deepEqual(calls[0]?.options.env, { PATH: "/bin", IN: "/mnt/a/y" });
  });

  it("runs posh-exec in the workspace, then dot -Tsvg on its output", async () => {
    const { run, calls } = fakeRunner({
      "/bin/posh-exec": { stdout: DOT },
      "/usr/bin/dot": { stdout: '<?xml version="1.0"?>\n<svg width="10pt"></svg>\n' },
    });
    const outcome = await computePlan(request(), run);
    assert.equal(outcome.kind, "svg");
    assert.equal(calls.length, 2);
    assert.deepEqual(calls[0]?.args, ["--explain", "--format", "dot", "--placement", "greedy", "--copies-per-mount", "1", "/w/s.sh"]);
    assert.equal(calls[0]?.options.cwd, "/w");
    assert.deepEqual(calls[1]?.args, ["-Tsvg"]);
    assert.equal(calls[1]?.options.input, DOT);
    if (outcome.kind === "svg") {
      assert.match(outcome.svg, /<svg/);
      assert.equal(outcome.dot, DOT);
      assert.equal(outcome.warnings, "");
    }
  });

  it("gives the dot text when graphviz is missing", async () => {
    const { run, calls } = fakeRunner({ "/bin/posh-exec": { stdout: DOT } });
    const outcome = await computePlan(request({ dotPath: undefined }), run);
    assert.deepEqual(outcome, { kind: "dot", dot: DOT, warnings: "", reason: "no-graphviz", detail: "Graphviz's dot is not on PATH." });
    assert.equal(calls.length, 1);
  });

  it("gives the dot text when dot fails or prints no SVG", async () => {
    for (const failed of [{ code: 1, stderr: "Error: syntax error in line 2\n" }, { code: 0, stdout: "nothing" }, { code: null, error: "dot could not be run" }]) {
      const { run } = fakeRunner({ "/bin/posh-exec": { stdout: DOT }, "/usr/bin/dot": failed });
      const outcome = await computePlan(request(), run);
      assert.equal(outcome.kind, "dot", JSON.stringify(failed));
      if (outcome.kind === "dot") {
        assert.equal(outcome.reason, "dot-failed");
        assert.match(outcome.detail, /^dot -Tsvg failed: /);
      }
    }
  });

  it("keeps a plan posh-exec printed with a syntax error, its stderr as a warning", async () => {
    const { run } = fakeRunner({
      "/bin/posh-exec": { code: 2, stdout: DOT, stderr: "s.sh:4:1: syntax error: unexpected `fi'\n" },
      "/usr/bin/dot": { stdout: "<svg></svg>" },
    });
    const outcome = await computePlan(request(), run);
    assert.equal(outcome.kind, "svg");
    assert.equal(outcome.kind === "svg" && outcome.warnings, "s.sh:4:1: syntax error: unexpected `fi'");
  });

  it("is an error when posh-exec prints no plan, or cannot run", async () => {
    const cases: [Partial<RunResult>, RegExp][] = [
      [{ code: 2, stderr: "posh.toml:4:1: unknown key `mout`\nmore\n" }, /printed no plan: posh\.toml:4:1: unknown key `mout`$/],
      [{ code: 1 }, /printed no plan: exit status 1$/],
      [{ code: null, error: "/bin/posh-exec could not be run: spawn EACCES" }, /could not be run/],
    ];
    for (const [result, message] of cases) {
      const { run, calls } = fakeRunner({ "/bin/posh-exec": result });
      const outcome = await computePlan(request(), run);
      assert.equal(outcome.kind, "error");
      assert.match(outcome.kind === "error" ? outcome.message : "", message);
      assert.equal(calls.length, 1, "dot is not run without a plan");
    }
  });
});

describe("runProcess", () => {
  it("passes input, cwd and env, and collects both outputs and the status", async () => {
    const dir = tempDir("run");
    const r = await runProcess(
      process.execPath,
      ["-e", "let s='';process.stdin.on('data',d=>s+=d).on('end',()=>{console.log(s.toUpperCase()+process.cwd()+process.env.X);console.error('E');process.exit(3)})"],
      { cwd: dir, input: "abc", env: { ...process.env, X: "!" }, timeoutMs: 20_000 },
    );
    assert.equal(r.code, 3);
    assert.equal(r.stdout, `ABC${fs.realpathSync(dir)}!\n`);
    assert.equal(r.stderr, "E\n");
    assert.equal(r.error, undefined);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("reports a program that does not exist", async () => {
    const r = await runProcess("/nonexistent/posh-exec", [], { cwd: "/", timeoutMs: 5_000 });
    assert.match(r.error ?? "", /could not be run: .*ENOENT/);
  });

  it("stops a program that runs too long or prints too much", async () => {
    const slow = await runProcess(process.execPath, ["-e", "setTimeout(()=>{}, 60000)"], { cwd: "/", timeoutMs: 300 });
    assert.match(slow.error ?? "", /did not finish within/);
    const loud = await runProcess(process.execPath, ["-e", "process.stdout.write('x'.repeat(100000))"], {
      cwd: "/",
      timeoutMs: 20_000,
      maxBytes: 1000,
    });
    assert.match(loud.error ?? "", /printed more than 1000 bytes/);
  });
});

describe("the plan of a real script", () => {
  const exec = builtProgram("posh-exec", "POSH_EXEC");

  it("comes from posh-exec as dot, and from Graphviz as SVG when it is installed", { skip: exec === undefined ? "posh-exec is not built (cargo build -p posh-exec) and POSH_EXEC is not set" : false }, async () => {
    const dir = tempDir("plan");
    fs.writeFileSync(path.join(dir, "a.txt"), "foo\nbar\n");
    const script = writeScript(path.join(dir, "s.sh"), "cat a.txt | grep foo | wc -l");
    const dotPath = findOnPath(nodeHost(), "dot");
    const outcome = await computePlan(
      { execPath: exec ?? "", dotPath, script, cwd: dir, settings: SERVER_SETTING_DEFAULTS, env: { ...process.env, XDG_CONFIG_HOME: dir } },
      runProcess,
    );
    assert.notEqual(outcome.kind, "error", JSON.stringify(outcome));
    if (outcome.kind !== "error") {
      assert.match(outcome.dot, /^digraph /);
      assert.ok(outcome.dot.includes("grep foo"), outcome.dot);
    }
    assert.equal(outcome.kind, dotPath === undefined ? "dot" : "svg");
    if (outcome.kind === "svg") {
      assert.match(outcome.svg, /<svg[\s>]/);
    }
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("is an error for a script that does not exist", { skip: exec === undefined ? "posh-exec is not built" : false }, async () => {
    const dir = tempDir("plan-missing");
    const outcome = await computePlan(
      { execPath: exec ?? "", dotPath: undefined, script: path.join(dir, "missing.sh"), cwd: dir, settings: SERVER_SETTING_DEFAULTS },
      runProcess,
    );
    assert.equal(outcome.kind, "error");
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
