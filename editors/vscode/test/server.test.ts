// The settings as the extension sends them, read by the real posh-lsp: started as the client
// starts it (`posh-lsp --stdio`), initialized with initializationOptions() and updated with
// didChangeConfigurationSettings(). `maxMovedBytes` is the setting whose effect is visible
// without reading any label: the S003 diagnostic. Skipped when no posh-lsp is built.

import assert from "node:assert/strict";
import * as cp from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import { pathToFileURL } from "node:url";
import {
  CodeLensRequest,
  DidChangeConfigurationNotification,
  DidOpenTextDocumentNotification,
  ExitNotification,
  InitializeRequest,
  InitializedNotification,
  InlayHintRequest,
  LogMessageNotification,
  PublishDiagnosticsNotification,
  RegistrationRequest,
  ShowMessageNotification,
  ShutdownRequest,
  StreamMessageReader,
  StreamMessageWriter,
  UnregistrationRequest,
  createProtocolConnection,
  type Diagnostic,
  type ProtocolConnection,
} from "vscode-languageserver-protocol/node";
import { didChangeConfigurationSettings, initializationOptions, readServerSettings } from "../src/settings";
import { builtProgram, tempDir } from "./helpers";

const server = builtProgram("posh-lsp", "POSH_LSP");
const skip = server === undefined ? "posh-lsp is not built (cargo build -p posh-lsp) and POSH_LSP is not set" : false;

describe("posh-lsp reading the extension's settings", { skip }, () => {
  let ws: string;
  let child: cp.ChildProcess;
  let connection: ProtocolConnection;
  let scriptUri: string;
  const published: Diagnostic[][] = [];
  let stderr = "";

  const s003 = (diags: readonly Diagnostic[] | undefined) => (diags ?? []).filter((d) => d.code === "S003");

  async function nextDiagnostics(after: number, what: string): Promise<Diagnostic[]> {
    const deadline = Date.now() + 20_000;
    while (published.length <= after) {
      if (Date.now() > deadline) {
        assert.fail(`no diagnostics published for ${what}; stderr: ${stderr}`);
      }
      await new Promise((r) => setTimeout(r, 20));
    }
    return published[published.length - 1] ?? [];
  }

  before(async () => {
    ws = tempDir("lsp");
    // A mount holding a 10 MB file (sparse: only its size matters), and a pipeline reading it
    // whose output comes back to the client: whatever the plan, it moves well over 1 byte and
    // well under the default threshold (100 MB), so S003 shows only with maxMovedBytes 1.
    fs.mkdirSync(path.join(ws, "logs"));
    fs.writeFileSync(path.join(ws, "posh.toml"), '[[mount]]\npath = "logs"\nproxy = "embedded"\n');
    const big = fs.openSync(path.join(ws, "logs", "x.log"), "w");
    fs.ftruncateSync(big, 10_000_000);
    fs.closeSync(big);
    fs.writeFileSync(path.join(ws, "run.sh"), "#!/bin/bash\ncat logs/x.log | grep foo | tee local.txt\n");
    scriptUri = pathToFileURL(path.join(ws, "run.sh")).href;

    child = cp.spawn(server ?? "", ["--stdio"], {
      cwd: ws,
      // No user configuration or measured ratios from this machine.
      env: { ...process.env, XDG_CONFIG_HOME: path.join(ws, ".config"), XDG_STATE_HOME: path.join(ws, ".state") },
      stdio: ["pipe", "pipe", "pipe"],
    });
    child.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
    connection = createProtocolConnection(
      new StreamMessageReader(child.stdout as NodeJS.ReadableStream),
      new StreamMessageWriter(child.stdin as NodeJS.WritableStream),
    );
    connection.onNotification(PublishDiagnosticsNotification.type, (p) => {
      if (p.uri === scriptUri) {
        published.push(p.diagnostics);
      }
    });
    // Registrations (file watchers) and refreshes: accepted, as VS Code does.
    connection.onRequest(RegistrationRequest.type, () => undefined);
    connection.onRequest(UnregistrationRequest.type, () => undefined);
    connection.onNotification(LogMessageNotification.type, (m) => (stderr += `log: ${m.message}\n`));
    connection.onNotification(ShowMessageNotification.type, (m) => (stderr += `message: ${m.message}\n`));
    connection.listen();

    const settings = readServerSettings((k) => ({ maxMovedBytes: 1 })[k]);
    await connection.sendRequest(InitializeRequest.type, {
      processId: process.pid,
      rootUri: pathToFileURL(ws).href,
      workspaceFolders: [{ uri: pathToFileURL(ws).href, name: "ws" }],
      capabilities: {
        textDocument: { publishDiagnostics: {}, inlayHint: {}, codeLens: {} },
        workspace: { didChangeWatchedFiles: { dynamicRegistration: true } },
      },
      initializationOptions: initializationOptions(settings),
    });
    await connection.sendNotification(InitializedNotification.type, {});
  });

  after(async () => {
    if (connection !== undefined) {
      await Promise.race([connection.sendRequest(ShutdownRequest.type), new Promise((r) => setTimeout(r, 5_000))]);
      await connection.sendNotification(ExitNotification.type);
      connection.dispose();
    }
    await new Promise((r) => setTimeout(r, 100));
    child?.kill();
    fs.rmSync(ws, { recursive: true, force: true });
  });

  it("takes maxMovedBytes from initializationOptions", async () => {
    await connection.sendNotification(DidOpenTextDocumentNotification.type, {
      textDocument: { uri: scriptUri, languageId: "shellscript", version: 1, text: fs.readFileSync(path.join(ws, "run.sh"), "utf8") },
    });
    const diags = await nextDiagnostics(0, "the opened script");
    assert.equal(s003(diags).length, 1, `with maxMovedBytes 1: ${JSON.stringify(diags)}`);
  });

  it("answers inlay hints and code lenses for the script (their labels are the server's business)", async () => {
    const hints = await connection.sendRequest(InlayHintRequest.type, {
      textDocument: { uri: scriptUri },
      range: { start: { line: 0, character: 0 }, end: { line: 3, character: 0 } },
    });
    assert.ok(Array.isArray(hints) && hints.length > 0, `hints: ${JSON.stringify(hints)}`);
    for (const h of hints) {
      assert.equal(typeof h.position.line, "number");
    }
    const lenses = await connection.sendRequest(CodeLensRequest.type, { textDocument: { uri: scriptUri } });
    assert.ok(Array.isArray(lenses) && lenses.length > 0, `lenses: ${JSON.stringify(lenses)}`);
  });

  it("takes a new maxMovedBytes from workspace/didChangeConfiguration, under posh", async () => {
    const before = published.length;
    const high = readServerSettings((k) => ({ maxMovedBytes: 1_000_000_000_000_000, placement: "greedy", copiesPerMount: 2 })[k]);
    await connection.sendNotification(DidChangeConfigurationNotification.type, { settings: didChangeConfigurationSettings(high) });
    let diags = await nextDiagnostics(before, "the raised threshold");
    assert.equal(s003(diags).length, 0, `with maxMovedBytes 10^15: ${JSON.stringify(diags)}`);

    const again = published.length;
    const low = readServerSettings((k) => ({ maxMovedBytes: 1 })[k]);
    await connection.sendNotification(DidChangeConfigurationNotification.type, { settings: didChangeConfigurationSettings(low) });
    diags = await nextDiagnostics(again, "the lowered threshold");
    assert.equal(s003(diags).length, 1, `with maxMovedBytes 1 again: ${JSON.stringify(diags)}`);
  });
});
