// src/extension.ts, the glue, run against the fakes of test/fakes (esbuild.mjs --tests resolves
// `vscode` and `vscode-languageclient/node` to them): activation, server discovery and its error,
// settings sent to the server, restart, deactivate, and the plan command with fake programs.

import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { afterEach, beforeEach, describe, it } from "node:test";
import { COMMAND_IDS } from "../src/commands";
import { activate, deactivate } from "../src/extension";
import { behaviour, clients } from "./fakes/languageclient";
import { Uri, fake } from "./fakes/vscode";
import { manifest, tempDir, writeScript } from "./helpers";

const ENV_KEYS = ["PATH", "HOME", "POSH_LSP", "POSH_EXEC", "CARGO_HOME"] as const;

async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!condition()) {
    if (Date.now() > deadline) {
      assert.fail(`timed out waiting for ${what}`);
    }
    await new Promise((r) => setTimeout(r, 5));
  }
}

interface FakeContext {
  subscriptions: { dispose(): unknown }[];
  extensionPath: string;
}

describe("the extension in a fake VS Code", () => {
  let dir: string;
  let saved: Record<string, string | undefined>;
  let context: FakeContext;

  beforeEach(() => {
    fake.reset();
    behaviour.reset();
    saved = Object.fromEntries(ENV_KEYS.map((k) => [k, process.env[k]]));
    dir = tempDir("ext");
    // Nothing to find: an empty PATH and home, no POSH_LSP.
    fs.mkdirSync(path.join(dir, "empty-bin"));
    fs.mkdirSync(path.join(dir, "home"));
    fs.mkdirSync(path.join(dir, "extension"));
    process.env["PATH"] = path.join(dir, "empty-bin");
    process.env["HOME"] = path.join(dir, "home");
    for (const k of ["POSH_LSP", "POSH_EXEC", "CARGO_HOME"]) {
      delete process.env[k];
    }
    context = { subscriptions: [], extensionPath: path.join(dir, "extension") };
  });

  afterEach(async () => {
    await deactivate();
    for (const s of context.subscriptions) {
      s.dispose();
    }
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) {
        delete process.env[k];
      } else {
        process.env[k] = v;
      }
    }
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const start = () => activate(context as never);

  it("deactivates without an activation, and without a client", async () => {
    assert.equal(deactivate(), undefined);
  });

  it("registers every command of package.json", async () => {
    start();
    const contributed = manifest().contributes.commands.map((c) => c.command).sort();
    assert.deepEqual([...fake.commands.keys()].sort(), contributed);
    assert.deepEqual([...COMMAND_IDS].sort(), contributed);
  });

  it("says what it tried when posh-lsp is nowhere, and deactivates cleanly", async () => {
    start();
    await until(() => fake.messages.length > 0, "the error message");
    const [m] = fake.messages;
    assert.equal(m?.kind, "error");
    assert.deepEqual(m?.items, ["Open Settings", "How to install"]);
    for (const part of ["Could not find posh-lsp", "posh.server.path", "$POSH_LSP", path.join(context.extensionPath, "server", "posh-lsp"), "on PATH", path.join(dir, "home", ".cargo", "bin", "posh-lsp")]) {
      assert.ok(m?.message.includes(part), `${part} not in: ${m?.message}`);
    }
    assert.equal(clients.length, 0);
    assert.ok(fake.output.join("").includes("Could not find posh-lsp"));
    const stopped = deactivate();
    assert.ok(stopped instanceof Promise);
    await assert.doesNotReject(stopped);
  });

  it("opens the settings, or says how to install, from that message", async () => {
    fake.answers.push("Open Settings");
    start();
    await until(() => fake.executed.length > 0, "the settings command");
    assert.deepEqual(fake.executed[0], { command: "workbench.action.openSettings", args: ["posh.server.path"] });

    await deactivate();
    fake.reset();
    fake.answers.push("How to install", "Copy Command");
    start();
    await until(() => fake.clipboard !== "", "the copied command");
    const help = fake.messages[1];
    assert.equal(help?.kind, "info");
    assert.match(help?.detail ?? "", /cargo install --path posh-lsp/);
    assert.equal(fake.clipboard, "cargo install --path posh-lsp");
  });

  it("starts the posh-lsp POSH_LSP names, with the settings as initializationOptions", async () => {
    const server = writeScript(path.join(dir, "bin", "posh-lsp"), "exit 0");
    process.env["POSH_LSP"] = server;
    fake.settings.set("placement", "greedy");
    fake.settings.set("maxMovedBytes", 5_000);
    fake.settings.set("server.extraEnv", { POSH_TEST_VAR: "1", BAD: 2 });
    start();
    await until(() => clients[0]?.isRunning() === true, "the client");
    const c = clients[0];
    assert.ok(c);
    assert.equal(c.id, "posh");
    assert.equal(c.name, "posh-lsp");
    assert.equal(c.serverOptions.command, server);
    assert.equal(c.serverOptions.transport, 0); // stdio
    assert.equal(c.serverOptions.options?.env?.["POSH_TEST_VAR"], "1");
    assert.equal(c.serverOptions.options?.env?.["BAD"], undefined);
    assert.deepEqual(c.clientOptions.initializationOptions, { maxMovedBytes: 5_000, copiesPerMount: 1, placement: "greedy", run: [] });
    assert.deepEqual(c.clientOptions.documentSelector, [
      { scheme: "file", language: "shellscript" },
      { scheme: "file", language: "posh" },
    ]);
    assert.ok(c.clientOptions.outputChannel);
    // A server that ran restarts after a crash, as by default.
    assert.deepEqual(await c.clientOptions.errorHandler?.closed(), { action: 2 });
    assert.deepEqual(fake.messages, []);
  });

  it("sends changed settings to the running server, and restarts it for a new path", async () => {
    const first = writeScript(path.join(dir, "bin", "posh-lsp"), "exit 0");
    const second = writeScript(path.join(dir, "other", "posh-lsp"), "exit 0");
    process.env["PATH"] = path.join(dir, "bin");
    start();
    await until(() => clients[0]?.isRunning() === true, "the client");
    const c = clients[0];
    assert.equal(c?.serverOptions.command, first);

    fake.changeSettings({ copiesPerMount: 3, placement: "nonsense" });
    await until(() => (c?.notifications.length ?? 0) > 0, "the notification");
    assert.deepEqual(c?.notifications, [
      {
        method: "workspace/didChangeConfiguration",
        params: { settings: { posh: { maxMovedBytes: 100_000_000, copiesPerMount: 3, placement: "cost-based", run: [] } } },
      },
    ]);
    assert.equal(clients.length, 1, "no restart for a live setting");

    fake.changeSettings({ "server.path": second });
    await until(() => clients[1]?.isRunning() === true, "the new client");
    assert.equal(c?.state, "stopped");
    assert.equal(clients[1]?.serverOptions.command, second);

    await fake.commands.get("posh.restartServer")?.();
    assert.equal(clients.length, 3);
    assert.equal(clients[1]?.state, "stopped");
    assert.equal(clients[2]?.isRunning(), true);

    fake.trustGranted.fire();
    await until(() => clients[3]?.isRunning() === true, "the client after trust");
    assert.equal(clients[2]?.state, "stopped");

    await deactivate();
    assert.equal(clients[3]?.state, "stopped");
    assert.ok(clients.every((x) => x.state === "stopped"));
  });

  it("ignores the workspace's server path and environment until the workspace is trusted", async () => {
    const user = writeScript(path.join(dir, "user", "posh-lsp"), "exit 0");
    const planted = writeScript(path.join(dir, "planted", "posh-lsp"), "exit 0");
    fake.settings.set("server.path", user);
    fake.workspaceSettings.set("server.path", planted);
    fake.workspaceSettings.set("server.extraEnv", { LD_PRELOAD: "/tmp/evil.so" });
    fake.workspaceSettings.set("maxMovedBytes", 7);
    fake.trusted = false;
    start();
    await until(() => clients[0]?.isRunning() === true, "the client");
    assert.equal(clients[0]?.serverOptions.command, user);
    assert.equal(clients[0]?.serverOptions.options?.env?.["LD_PRELOAD"], process.env["LD_PRELOAD"]);
    // Thresholds choose no program: the workspace's value applies.
    assert.deepEqual(clients[0]?.clientOptions.initializationOptions, { maxMovedBytes: 7, copiesPerMount: 1, placement: "cost-based", run: [] });

    fake.trusted = true;
    fake.trustGranted.fire();
    await until(() => clients[1]?.isRunning() === true, "the client after trust");
    assert.equal(clients[1]?.serverOptions.command, planted);
    assert.equal(clients[1]?.serverOptions.options?.env?.["LD_PRELOAD"], "/tmp/evil.so");
  });

  it("prefers a posh-lsp shipped in the extension to PATH", async () => {
    writeScript(path.join(dir, "bin", "posh-lsp"), "exit 0");
    process.env["PATH"] = path.join(dir, "bin");
    const bundled = writeScript(path.join(context.extensionPath, "server", "posh-lsp"), "exit 0");
    start();
    await until(() => clients.length > 0, "the client");
    assert.equal(clients[0]?.serverOptions.command, bundled);
  });

  it("logs a server that fails to start, and still deactivates", async () => {
    process.env["POSH_LSP"] = writeScript(path.join(dir, "bin", "posh-lsp"), "exit 1");
    behaviour.failStart = new Error("Connection to server got closed.");
    start();
    await until(() => fake.output.join("").includes("did not start"), "the log line");
    assert.match(fake.output.join(""), /posh-lsp \(.*\/bin\/posh-lsp\) did not start: Connection to server got closed\./);
    // The real client shows its own notification for this; the extension adds none.
    assert.deepEqual(fake.messages, []);
    // And the client is not to start it again on its own.
    assert.deepEqual(await clients[0]?.clientOptions.errorHandler?.closed(), { action: 1, handled: true });
    await assert.doesNotReject(Promise.resolve(deactivate()));
    assert.equal(clients[0]?.stops, 0, "a client that failed to start is not stopped");
  });

  it("deactivates without throwing when stopping the client throws", async () => {
    process.env["POSH_LSP"] = writeScript(path.join(dir, "bin", "posh-lsp"), "exit 0");
    start();
    await until(() => clients[0]?.isRunning() === true, "the client");
    behaviour.failStop = new Error("Client is not running and can't be stopped.");
    await assert.doesNotReject(Promise.resolve(deactivate()));
    assert.equal(clients[0]?.stops, 1);
  });

  it("shows the output channel", async () => {
    start();
    await fake.commands.get("posh.showOutput")?.();
    assert.equal(fake.outputShown, 1);
  });

  describe("posh.showPlan", () => {
    let ws: string;
    let bin: string;
    let argsFile: string;

    beforeEach(() => {
      ws = path.join(dir, "workspace");
      bin = path.join(dir, "tools");
      argsFile = path.join(dir, "args.txt");
      fs.mkdirSync(ws);
      fs.writeFileSync(path.join(ws, "s.sh"), "cat a | grep b\n");
      // A fake posh-exec that records its arguments and working directory, and prints a plan
      // whose label needs escaping. Shell builtins only: PATH holds nothing else.
      writeScript(
        path.join(bin, "posh-exec"),
        `printf '%s\\n' "$PWD" "$@" > '${argsFile}'\nprintf 'digraph posh {\\n  p0n0 [label="grep <b> & c"];\\n}\\n'\nprintf 'warning: from posh-exec\\n' >&2`,
      );
      process.env["PATH"] = bin;
      fake.workspaceFolders = [{ uri: Uri.file(ws), name: "ws", index: 0 }];
      fake.activeTextEditor = {
        document: { uri: Uri.file(path.join(ws, "s.sh")), isUntitled: false, isDirty: false, languageId: "shellscript" },
      };
    });

    const showPlan = () => fake.commands.get("posh.showPlan")?.();

    it("runs posh-exec in the workspace folder and shows the dot text when graphviz is missing", async () => {
      fake.settings.set("copiesPerMount", 2);
      start();
      await showPlan();
      assert.deepEqual(fs.readFileSync(argsFile, "utf8").trim().split("\n"), [
        ws,
        "--explain",
        "--format",
        "dot",
        "--placement",
        "cost-based",
        "--copies-per-mount",
        "2",
        path.join(ws, "s.sh"),
      ]);
      assert.equal(fake.panels.length, 1);
      const panel = fake.panels[0];
      assert.equal(panel?.title, "Plan: s.sh");
      assert.deepEqual(panel?.options, { enableScripts: false, enableCommandUris: false, localResourceRoots: [] });
      const html = panel?.webview.html ?? "";
      assert.match(html, /Content-Security-Policy" content="default-src &#39;none&#39;/);
      assert.match(html, /Install graphviz/);
      assert.ok(html.includes("grep &lt;b&gt; &amp; c"));
      assert.ok(html.includes("warning: from posh-exec"));
      assert.ok(!html.includes("<b> & c"));
    });

    it("renders the plan with dot -Tsvg when dot is on PATH, in the same panel", async () => {
      writeScript(path.join(bin, "dot"), `[ "$1" = -Tsvg ] || exit 9\nwhile IFS= read -r line; do :; done\nprintf '<svg xmlns="http://www.w3.org/2000/svg"><text>plan</text></svg>\\n'`);
      fake.activeTextEditor = {
        document: { uri: Uri.file(path.join(ws, "s.sh")), isUntitled: false, isDirty: true, languageId: "shellscript" },
      };
      start();
      await showPlan();
      await showPlan();
      assert.equal(fake.panels.length, 1, "the panel is reused");
      assert.equal(fake.panels[0]?.revealed, 1);
      const html = fake.panels[0]?.webview.html ?? "";
      const b64 = /src="data:image\/svg\+xml;base64,([A-Za-z0-9+/=]+)"/.exec(html)?.[1];
      assert.ok(b64, "an image of the SVG");
      assert.equal(Buffer.from(b64, "base64").toString("utf8"), '<svg xmlns="http://www.w3.org/2000/svg"><text>plan</text></svg>\n');
      assert.match(html, /unsaved changes/);
      assert.ok(!html.includes("Install graphviz"));
    });

    it("opens a new panel after the old one was closed", async () => {
      start();
      await showPlan();
      fake.panels[0]?.dispose();
      await showPlan();
      assert.equal(fake.panels.length, 2);
    });

    it("finds posh-exec through posh.exec.path and reports it missing like the server", async () => {
      fake.settings.set("exec.path", path.join(dir, "nowhere", "posh-exec"));
      start();
      await showPlan();
      const m = fake.messages.find((x) => x.message.includes("posh.exec.path"));
      assert.ok(m, JSON.stringify(fake.messages));
      assert.deepEqual(m.items, ["Open Settings", "How to install"]);
      assert.equal(fake.panels.length, 0);
    });

    it("says what to do without a saved script", async () => {
      start();
      fake.activeTextEditor = undefined;
      await showPlan();
      fake.activeTextEditor = { document: { uri: Uri.untitled("Untitled-1"), isUntitled: true, isDirty: true, languageId: "shellscript" } };
      await showPlan();
      const texts = fake.messages.map((m) => m.message).filter((m) => !m.includes("posh-lsp"));
      assert.equal(texts.length, 2);
      assert.match(texts[0] ?? "", /open a shell script/);
      assert.match(texts[1] ?? "", /save the script/);
      assert.equal(fake.panels.length, 0);
    });

    it("shows an error when posh-exec prints no plan", async () => {
      writeScript(path.join(bin, "posh-exec"), "printf 'posh.toml:1:1: bad key\\n' >&2\nexit 2");
      start();
      await showPlan();
      const m = fake.messages.find((x) => x.message.includes("printed no plan"));
      assert.ok(m, JSON.stringify(fake.messages));
      assert.match(m.message, /posh\.toml:1:1: bad key/);
      assert.match(fake.panels[0]?.webview.html ?? "", /printed no plan/);
    });
  });
});
