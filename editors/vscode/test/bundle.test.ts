// The bundle as shipped (dist/extension.js, with the real vscode-languageclient inside) against
// a stand-in `vscode` module: activation starts the real posh-lsp, the client and the server
// complete `initialize` with the settings as initializationOptions, and deactivate shuts the
// server down. Skipped when no posh-lsp is built. Whatever the stand-in lacks is an inert stub,
// so this checks the start and stop of the client, not VS Code's rendering.

import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { after, before, beforeEach, describe, it } from "node:test";
import { EXT_DIR, builtProgram, tempDir } from "./helpers";

const server = builtProgram("posh-lsp", "POSH_LSP");
const bundle = path.join(EXT_DIR, "dist", "extension.js");
const skip =
  server === undefined
    ? "posh-lsp is not built (cargo build -p posh-lsp) and POSH_LSP is not set"
    : !fs.existsSync(bundle)
      ? "dist/extension.js is not built (npm run build)"
      : process.platform !== "linux"
        ? "reads /proc"
        : false;

type AnyFn = (...args: unknown[]) => unknown;

/** Anything: callable, constructible, every property another stub, iterable as empty. */
function stub(): unknown {
  const target = function () {
    return undefined;
  };
  return new Proxy(target, {
    get(_t, p) {
      if (p === Symbol.iterator) {
        return function* () {};
      }
      if (p === "then" || p === Symbol.toPrimitive || p === "toJSON") {
        return undefined;
      }
      return stub();
    },
    apply: () => stub(),
    construct: () => stub() as object,
  });
}

/** An object whose missing properties are stubs. */
function partial<T extends object>(known: T): T {
  return new Proxy(known, { get: (t, p) => (p in t ? (t as Record<string | symbol, unknown>)[p] : stub()) });
}

class Disposable {
  constructor(private readonly onDispose?: () => void) {}
  static from(...items: { dispose(): unknown }[]): Disposable {
    return new Disposable(() => items.forEach((d) => d.dispose()));
  }
  dispose(): void {
    this.onDispose?.();
  }
}

class EventEmitter<T> {
  private listeners: ((e: T) => unknown)[] = [];
  readonly event = (l: (e: T) => unknown) => {
    this.listeners.push(l);
    return new Disposable();
  };
  fire(e: T): void {
    this.listeners.forEach((l) => l(e));
  }
  dispose(): void {}
}

/** The pids of this process's children running `name`. */
function children(name: string): number[] {
  const pids: number[] = [];
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) {
      continue;
    }
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      const cmdline = fs.readFileSync(`/proc/${entry}/cmdline`, "utf8");
      if (ppid === process.pid && cmdline.includes(name)) {
        pids.push(Number(entry));
      }
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

describe("the shipped bundle with the real language client", { skip }, () => {
  const ws = tempDir("bundle");
  const output: string[] = [];
  const errors: string[] = [];
  const commands: string[] = [];
  const settings: Record<string, unknown> = {};
  const text = () => output.join("");
  let ext: { activate(c: unknown): void; deactivate(): Promise<void> | undefined };

  before(() => {
    const event = () => new Disposable();
    const channel = {
      name: "posh",
      append: (t: string) => output.push(t),
      appendLine: (t: string) => output.push(`${t}\n`),
      show() {},
      hide() {},
      clear() {},
      replace() {},
      dispose() {},
    };
    const folder = { uri: { scheme: "file", fsPath: ws, path: ws, toString: () => `file://${ws}` }, name: "ws", index: 0 };
    const vscode = partial({
      Disposable,
      EventEmitter,
      version: "1.82.0",
      env: partial({ language: "en", appName: "stand-in", machineId: "0", uiKind: 1 }),
      window: partial({
        createOutputChannel: () => channel,
        showErrorMessage: async (m: string) => void errors.push(m),
        showWarningMessage: async (m: string) => void errors.push(m),
        showInformationMessage: async () => undefined,
        activeTextEditor: undefined,
        visibleTextEditors: [],
        onDidChangeActiveTextEditor: event,
        onDidChangeVisibleTextEditors: event,
      }),
      workspace: partial({
        getConfiguration: () => ({
          get: (k: string, d?: unknown) => settings[k] ?? d,
          inspect: () => undefined,
          has: (k: string) => k in settings,
        }),
        workspaceFolders: [folder],
        getWorkspaceFolder: () => folder,
        isTrusted: true,
        textDocuments: [],
        notebookDocuments: [],
        onDidChangeConfiguration: event,
        onDidGrantWorkspaceTrust: event,
        onDidOpenTextDocument: event,
        onDidCloseTextDocument: event,
        onDidChangeTextDocument: event,
        onDidSaveTextDocument: event,
        onWillSaveTextDocument: event,
        onDidChangeWorkspaceFolders: event,
        createFileSystemWatcher: () => ({ onDidCreate: event, onDidChange: event, onDidDelete: event, dispose() {} }),
      }),
      commands: partial({
        registerCommand: (id: string) => {
          commands.push(id);
          return new Disposable();
        },
        executeCommand: async () => undefined,
      }),
    });
    // `require("vscode")` inside the bundle gets the stand-in.
    const Module = require("node:module") as { _resolveFilename: AnyFn };
    const resolve = Module._resolveFilename;
    Module._resolveFilename = function (this: unknown, request: unknown, ...rest: unknown[]) {
      return request === "vscode" ? "vscode" : resolve.call(this, request, ...rest);
    };
    require.cache["vscode"] = { id: "vscode", filename: "vscode", loaded: true, exports: vscode } as NodeJS.Module;
    ext = require(bundle) as typeof ext;
  });

  beforeEach(() => {
    output.length = 0;
    errors.length = 0;
    commands.length = 0;
    for (const k of Object.keys(settings)) {
      delete settings[k];
    }
  });

  after(() => {
    fs.rmSync(ws, { recursive: true, force: true });
    // A deactivate that failed to stop the server would leave it, and this process, running.
    const left = children("posh-lsp");
    for (const pid of left) {
      process.kill(pid, "SIGKILL");
    }
    if (left.length > 0) {
      // The language client would start it again: end this test process, failed.
      setTimeout(() => process.exit(1), 3_000).unref();
    }
  });

  async function until(condition: () => boolean, ms: number): Promise<void> {
    const deadline = Date.now() + ms;
    while (!condition() && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  it("starts posh-lsp, initializes it with the settings, and stops it on deactivate", { timeout: 60_000 }, async () => {
    Object.assign(settings, { "server.path": server, "trace.server": "verbose", maxMovedBytes: 12345, placement: "greedy" });
    ext.activate({ subscriptions: [], extensionPath: path.join(ws, "no-extension-dir") });
    await until(() => text().includes("Received response 'initialize") || errors.length > 0, 20_000);
    assert.deepEqual(errors, []);
    assert.ok(text().includes(`[posh] starting ${server} (found: setting)`), text());
    assert.ok(text().includes("Received response 'initialize"), "no answer to initialize");
    const init = /"initializationOptions": (\{[^}]*\})/.exec(text())?.[1];
    assert.deepEqual(JSON.parse(init ?? "null"), { maxMovedBytes: 12345, copiesPerMount: 1, placement: "greedy", run: [] });
    assert.deepEqual(commands.sort(), ["posh.restartServer", "posh.showOutput", "posh.showPlan"]);
    assert.equal(children("posh-lsp").length, 1, "one posh-lsp child");

    await ext.deactivate();
    assert.ok(text().includes("Sending request 'shutdown"), "no shutdown request");
    await until(() => children("posh-lsp").length === 0, 5_000);
    assert.deepEqual(children("posh-lsp"), [], "posh-lsp still runs after deactivate");
    assert.equal(ext.deactivate(), undefined, "a second deactivate has nothing to stop");
  });

  it("gives up on a server that dies at once, without a restart loop, and deactivates cleanly", { timeout: 60_000 }, async () => {
    // A "posh-lsp" that exits before it answers: a missing library, a crash on start.
    const broken = path.join(ws, "broken", "posh-lsp");
    fs.mkdirSync(path.dirname(broken), { recursive: true });
    fs.writeFileSync(broken, "#!/bin/sh\nexit 1\n", { mode: 0o755 });
    settings["server.path"] = broken;
    settings["trace.server"] = "messages";
    // vscode-languageclient 9 leaves some of its own promises rejected without a handler on this
    // path (its write to the dead process, its internal stop() of a client still starting);
    // VS Code logs those. They are collected here instead of failing the test, and must be
    // those of the client, not the extension's.
    const harness = process.listeners("unhandledRejection");
    process.removeAllListeners("unhandledRejection");
    const rejections: unknown[] = [];
    process.on("unhandledRejection", (e) => rejections.push(e));
    try {
      ext.activate({ subscriptions: [], extensionPath: path.join(ws, "no-extension-dir") });
      await until(() => text().includes("did not start"), 20_000);
      assert.ok(text().includes(`[posh] posh-lsp (${broken}) did not start`), text());
      assert.ok(errors.length >= 1, "the client says it could not start");
      // No second try behind the extension's back.
      await new Promise((r) => setTimeout(r, 1_500));
      assert.equal(text().split("Sending request 'initialize").length - 1, 1, text());
      const stopped = ext.deactivate();
      await assert.doesNotReject(Promise.resolve(stopped));
      await until(() => children("posh-lsp").length === 0, 5_000);
      assert.deepEqual(children("posh-lsp"), [], "the broken server still runs");
    } finally {
      process.removeAllListeners("unhandledRejection");
      for (const l of harness) {
        process.on("unhandledRejection", l);
      }
    }
    for (const r of rejections) {
      const message = r instanceof Error ? r.message : String(r);
      assert.match(message, /EPIPE|stream was destroyed|connection got disposed|can't be stopped/, `an unexpected rejection: ${message}`);
    }
  });
});
