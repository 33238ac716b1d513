import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, it } from "node:test";
import { discover, findOnPath, nodeHost, notFoundMessage, type Host, type ToolSpec } from "../src/discovery";
import { tempDir, writeScript } from "./helpers";

/** A host whose executables are exactly `files`. */
function fakeHost(files: string[], env: Record<string, string | undefined> = {}, platform: NodeJS.Platform = "linux"): Host {
  const set = new Set(files);
  return { platform, env, homedir: platform === "win32" ? "C:\\Users\\me" : "/home/me", isExecutable: (f) => set.has(f) };
}

const spec = (over: Partial<ToolSpec> = {}): ToolSpec => ({
  name: "posh-lsp",
  setting: "posh.server.path",
  configured: "posh-lsp",
  envVar: "POSH_LSP",
  bundledDir: "/ext/server",
  baseDir: "/ws",
  ...over,
});

const ALL = [
  "/opt/custom/posh-lsp",
  "/env/posh-lsp",
  "/ext/server/posh-lsp",
  "/usr/local/bin/posh-lsp",
  "/home/me/.cargo/bin/posh-lsp",
];

describe("server discovery", () => {
  it("takes the setting first, then $POSH_LSP, the bundled binary, PATH, ~/.cargo/bin", () => {
    const env = { POSH_LSP: "/env/posh-lsp", PATH: "/usr/bin:/usr/local/bin" };
    const order: [string[], Record<string, string | undefined>, string | undefined, string, string][] = [
      [ALL, env, "/opt/custom/posh-lsp", "/opt/custom/posh-lsp", "setting"],
      [ALL, env, "posh-lsp", "/env/posh-lsp", "env"],
      [ALL, { PATH: env.PATH }, "posh-lsp", "/ext/server/posh-lsp", "bundled"],
      [ALL.slice(3), { PATH: env.PATH }, undefined, "/usr/local/bin/posh-lsp", "path"],
      [ALL.slice(4), { PATH: env.PATH }, "", "/home/me/.cargo/bin/posh-lsp", "cargo"],
    ];
    for (const [files, e, configured, expected, source] of order) {
      const r = discover(spec({ configured }), fakeHost(files, e));
      assert.ok(r.found, `expected ${expected}`);
      assert.equal(r.path, expected);
      assert.equal(r.source, source);
    }
  });

  it("treats the setting's default value as not set", () => {
    const r = discover(spec({ configured: "  posh-lsp " }), fakeHost(["/usr/bin/posh-lsp"], { PATH: "/usr/bin" }));
    assert.ok(r.found);
    assert.equal(r.source, "path");
  });

  it("resolves ~/, relative and bare names in the setting", () => {
    const host = fakeHost(["/home/me/bin/posh-lsp", "/ws/target/debug/posh-lsp", "/usr/bin/my-lsp"], { PATH: "/usr/bin" });
    const at = (configured: string) => {
      const r = discover(spec({ configured }), host);
      return r.found ? r.path : undefined;
    };
    assert.equal(at("~/bin/posh-lsp"), "/home/me/bin/posh-lsp");
    assert.equal(at("target/debug/posh-lsp"), "/ws/target/debug/posh-lsp");
    assert.equal(at("./target/debug/posh-lsp"), "/ws/target/debug/posh-lsp");
    assert.equal(at("my-lsp"), "/usr/bin/my-lsp");
  });

  it("reports a setting that names no executable instead of running another binary", () => {
    const r = discover(spec({ configured: "/nope/posh-lsp" }), fakeHost(ALL, { PATH: "/usr/local/bin" }));
    assert.equal(r.found, false);
    assert.ok(!r.found);
    const message = notFoundMessage(spec(), r);
    assert.match(message, /posh\.server\.path/);
    assert.match(message, /\/nope\/posh-lsp/);
  });

  it("reports a POSH_LSP that names no executable", () => {
    const r = discover(spec(), fakeHost(ALL.slice(2), { POSH_LSP: "/gone", PATH: "/usr/local/bin" }));
    assert.ok(!r.found);
    assert.match(notFoundMessage(spec(), r), /POSH_LSP is "\/gone"/);
  });

  it("lists every place it tried when nothing is found", () => {
    const r = discover(spec(), fakeHost([], { PATH: "/usr/bin:/bin" }));
    assert.ok(!r.found);
    assert.deepEqual(
      r.tried.map((a) => a.source),
      ["setting", "env", "bundled", "path", "cargo"],
    );
    const message = notFoundMessage(spec(), r);
    for (const part of ["Could not find posh-lsp", "posh.server.path", "$POSH_LSP", "/ext/server/posh-lsp", "posh-lsp on PATH", "/home/me/.cargo/bin/posh-lsp"]) {
      assert.ok(message.includes(part), `${JSON.stringify(part)} missing from: ${message}`);
    }
  });

  it("looks in $CARGO_HOME/bin before ~/.cargo/bin", () => {
    const host = fakeHost(["/cargo/bin/posh-lsp", "/home/me/.cargo/bin/posh-lsp"], { CARGO_HOME: "/cargo" });
    const r = discover(spec(), host);
    assert.ok(r.found);
    assert.equal(r.path, "/cargo/bin/posh-lsp");
  });

  it("skips relative and empty PATH entries", () => {
    const host = fakeHost(["bin/posh-lsp", "/b/posh-lsp"], { PATH: "::bin:./x:/b" });
    assert.equal(findOnPath(host, "posh-lsp"), "/b/posh-lsp");
    assert.equal(findOnPath(fakeHost(["bin/posh-lsp"], { PATH: "bin" }), "posh-lsp"), undefined);
  });

  it("finds posh-exec without a bundled directory, by its own setting and variable", () => {
    const exec: ToolSpec = { name: "posh-exec", setting: "posh.exec.path", configured: "posh-exec", envVar: "POSH_EXEC" };
    const r = discover(exec, fakeHost(["/x/posh-exec"], { POSH_EXEC: "/x/posh-exec", POSH_LSP: "/x/posh-lsp" }));
    assert.ok(r.found);
    assert.equal(r.path, "/x/posh-exec");
    const none = discover(exec, fakeHost([], {}));
    assert.ok(!none.found);
    assert.deepEqual(
      none.tried.map((a) => a.source),
      ["setting", "env", "path", "cargo"],
    );
  });

  it("adds Windows executable extensions and reads Path case-insensitively", () => {
    const host = fakeHost(["C:\\tools\\posh-lsp.exe"], { Path: "C:\\Windows;C:\\tools", PATHEXT: ".COM;.EXE" }, "win32");
    const r = discover(spec({ bundledDir: "C:\\ext\\server", baseDir: undefined }), host);
    assert.ok(r.found);
    assert.equal(r.path, "C:\\tools\\posh-lsp.exe");
  });

  it("checks the real file system: a regular executable file, not a directory or a plain file", () => {
    const dir = tempDir("discovery");
    const bin = path.join(dir, "bin");
    writeScript(path.join(bin, "posh-lsp"), "exit 0");
    fs.writeFileSync(path.join(bin, "posh-exec"), "not executable", { mode: 0o644 });
    fs.mkdirSync(path.join(bin, "dot"));
    const host = nodeHost({ PATH: bin, HOME: dir });
    assert.equal(findOnPath(host, "posh-lsp"), path.join(bin, "posh-lsp"));
    // No execute bit: not executable, for root too.
    assert.equal(findOnPath(host, "posh-exec"), undefined);
    assert.equal(findOnPath(host, "dot"), undefined);
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
