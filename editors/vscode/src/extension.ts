// posh for VS Code: the glue between VS Code and the modules beside this file, which hold the
// logic and import nothing from vscode (discovery, settings, plan, html, supervisor).
//
// posh-lsp does the rest: inlay hints (where each command runs, what each pipe moves), hover, a
// code lens per pipeline, diagnostics, and for annotation files completion, formatting,
// semantic tokens. It registers its own file watchers (posh.toml, *.posh).

import * as path from "node:path";
import * as vscode from "vscode";
import {
  CloseAction,
  DidChangeConfigurationNotification,
  ErrorAction,
  LanguageClient,
  TransportKind,
  type ErrorHandler,
  type LanguageClientOptions,
  type ServerOptions,
} from "vscode-languageclient/node";
import { COMMANDS, type CommandName } from "./commands";
import { discover, findOnPath, nodeHost, notFoundMessage, type ToolSpec } from "./discovery";
import { makeNonce, planHtml } from "./html";
import { COPY_COMMAND, HOW_TO_INSTALL, OPEN_SETTINGS, SHOW_OUTPUT, describeError, installHelp } from "./messages";
import { computePlan } from "./plan";
import { runProcess } from "./process";
import {
  LIVE_SETTINGS,
  RESTART_SETTINGS,
  RESTRICTED_SETTING_KEYS,
  didChangeConfigurationSettings,
  initializationOptions,
  readExtraEnv,
  readServerSettings,
} from "./settings";
import { Supervisor } from "./supervisor";

const CLIENT_ID = "posh"; // also the prefix of `posh.trace.server`, which the client reads
const CLIENT_NAME = "posh-lsp"; // in the client's own messages: "posh-lsp client: ..."

interface Session {
  readonly supervisor: Supervisor<LanguageClient>;
  readonly output: vscode.OutputChannel;
  planPanel: vscode.WebviewPanel | undefined;
}

let session: Session | undefined;

function config(): vscode.WorkspaceConfiguration {
  return vscode.workspace.getConfiguration("posh");
}

/**
 * `posh.<key>`; in an untrusted workspace, for a setting that chooses what program runs, the
 * user's value only, never the workspace's.
 */
function setting(key: string): unknown {
  const c = config();
  if (!vscode.workspace.isTrusted && (RESTRICTED_SETTING_KEYS as readonly string[]).includes(key)) {
    const values = c.inspect(key);
    return values?.globalValue ?? values?.defaultValue;
  }
  return c.get(key);
}

function stringSetting(key: string): string | undefined {
  const value = setting(key);
  return typeof value === "string" ? value : undefined;
}

/** The first workspace folder on disk: where relative paths in settings start. */
function firstFolder(): string | undefined {
  return vscode.workspace.workspaceFolders?.find((f) => f.uri.scheme === "file")?.uri.fsPath;
}

function serverSpec(context: vscode.ExtensionContext): ToolSpec {
  return {
    name: "posh-lsp",
    setting: "posh.server.path",
    configured: stringSetting("server.path"),
    envVar: "POSH_LSP",
    bundledDir: path.join(context.extensionPath, "server"),
    baseDir: firstFolder(),
  };
}

function execSpec(): ToolSpec {
  return {
    name: "posh-exec",
    setting: "posh.exec.path",
    configured: stringSetting("exec.path"),
    envVar: "POSH_EXEC",
    baseDir: firstFolder(),
  };
}

function childEnv(): NodeJS.ProcessEnv {
  return { ...process.env, ...readExtraEnv(setting("server.extraEnv")) };
}

/** Says what is missing, with "Open Settings" and "How to install"; does not wait for a click. */
function reportMissing(message: string, program: "posh-lsp" | "posh-exec", settingKey: string, output: vscode.OutputChannel): void {
  void (async () => {
    try {
      const choice = await vscode.window.showErrorMessage(message, OPEN_SETTINGS, HOW_TO_INSTALL);
      if (choice === OPEN_SETTINGS) {
        await vscode.commands.executeCommand("workbench.action.openSettings", settingKey);
      } else if (choice === HOW_TO_INSTALL) {
        const help = installHelp(program);
        const copy = await vscode.window.showInformationMessage(
          help.message,
          { modal: true, detail: help.detail },
          COPY_COMMAND,
        );
        if (copy === COPY_COMMAND) {
          await vscode.env.clipboard.writeText(help.command);
        }
      }
    } catch (e) {
      output.appendLine(`[posh] ${describeError(e)}`);
    }
  })();
}

async function startClient(context: vscode.ExtensionContext, output: vscode.OutputChannel): Promise<LanguageClient | undefined> {
  const spec = serverSpec(context);
  const found = discover(spec, nodeHost());
  if (!found.found) {
    const message = notFoundMessage(spec, found);
    output.appendLine(`[posh] ${message}`);
    reportMissing(message, "posh-lsp", spec.setting, output);
    return undefined;
  }
  output.appendLine(`[posh] starting ${found.path} (found: ${found.source})`);

  const serverOptions: ServerOptions = {
    command: found.path,
    transport: TransportKind.stdio,
    options: { env: childEnv() },
  };
  // A server that crashes after it started is restarted as the client does by default (a few
  // times, then it gives up); one that dies before it answers `initialize` is not: the client
  // would otherwise start it again behind the supervisor's back, which no longer holds it.
  let initialized = false;
  let defaults: ErrorHandler | undefined;
  const errorHandler: ErrorHandler = {
    error: (error, message, count) => defaults?.error(error, message, count) ?? { action: ErrorAction.Shutdown },
    closed: () =>
      initialized && defaults !== undefined ? defaults.closed() : { action: CloseAction.DoNotRestart, handled: true },
  };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [
      { scheme: "file", language: "shellscript" },
      { scheme: "file", language: "posh" },
    ],
    initializationOptions: initializationOptions(readServerSettings(setting)),
    outputChannel: output,
    errorHandler,
  };
  const client = new LanguageClient(CLIENT_ID, CLIENT_NAME, serverOptions, clientOptions);
  defaults = client.createDefaultErrorHandler();
  let failure: unknown;
  try {
    await client.start();
  } catch (e) {
    failure = e;
  }
  // start() can also resolve for a server whose connection closed before it answered
  // `initialize` (vscode-languageclient 9): only a running client counts.
  if (failure !== undefined || !client.isRunning()) {
    // The client has said so already ("couldn't create connection to server", with a button to
    // this output channel), so no second notification. It failed to start: stop() would throw,
    // and there is nothing to stop.
    const why = failure === undefined ? "the connection closed before it answered initialize" : describeError(failure);
    output.appendLine(`[posh] posh-lsp (${found.path}) did not start: ${why}`);
    return undefined;
  }
  initialized = true;
  return client;
}

/** Hands the three server settings to the running server. */
async function pushSettings(s: Session): Promise<void> {
  const client = s.supervisor.current;
  if (client === undefined || !client.isRunning()) {
    return;
  }
  const settings = readServerSettings(setting);
  try {
    await client.sendNotification(DidChangeConfigurationNotification.type, {
      settings: didChangeConfigurationSettings(settings),
    });
  } catch (e) {
    s.output.appendLine(`[posh] sending the settings: ${describeError(e)}`);
  }
}

async function showPlan(s: Session): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (editor === undefined) {
    void vscode.window.showErrorMessage("posh: open a shell script to see its plan.");
    return;
  }
  const doc = editor.document;
  if (doc.uri.scheme !== "file" || doc.isUntitled) {
    void vscode.window.showErrorMessage("posh: save the script to a file first: posh-exec plans a file on disk.");
    return;
  }
  const spec = execSpec();
  const exec = discover(spec, nodeHost());
  if (!exec.found) {
    const message = notFoundMessage(spec, exec);
    s.output.appendLine(`[posh] ${message}`);
    reportMissing(message, "posh-exec", spec.setting, s.output);
    return;
  }
  const script = doc.uri.fsPath;
  const cwd = vscode.workspace.getWorkspaceFolder(doc.uri)?.uri.fsPath ?? path.dirname(script);
  const notes = doc.isDirty ? ["The editor has unsaved changes: this is the plan of the file as saved."] : [];

  const outcome = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Window, title: "posh: planning" },
    () =>
      computePlan(
        {
          execPath: exec.path,
          dotPath: findOnPath(nodeHost(), "dot"),
          script,
          cwd,
          settings: readServerSettings(setting),
          env: childEnv(),
        },
        runProcess,
      ),
  );
  if (outcome.kind === "error") {
    s.output.appendLine(`[posh] ${outcome.message}\n${outcome.detail}`);
    void vscode.window.showErrorMessage(`posh: ${outcome.message}`, SHOW_OUTPUT).then((choice) => {
      if (choice === SHOW_OUTPUT) {
        s.output.show(true);
      }
    });
  }

  const title = path.basename(script);
  if (s.planPanel === undefined) {
    const panel = vscode.window.createWebviewPanel(
      "posh.plan",
      `Plan: ${title}`,
      { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true },
      { enableScripts: false, enableCommandUris: false, localResourceRoots: [] },
    );
    panel.onDidDispose(() => {
      if (s.planPanel === panel) {
        s.planPanel = undefined;
      }
    });
    s.planPanel = panel;
  } else {
    s.planPanel.title = `Plan: ${title}`;
    s.planPanel.reveal(vscode.ViewColumn.Beside, true);
  }
  s.planPanel.webview.html = planHtml({ title, outcome, notes, nonce: makeNonce() });
}

export function activate(context: vscode.ExtensionContext): void {
  const output = vscode.window.createOutputChannel("posh");
  context.subscriptions.push(output);
  const supervisor = new Supervisor<LanguageClient>(
    () => startClient(context, output),
    (what, e) => output.appendLine(`[posh] ${what}: ${describeError(e)}`),
  );
  const s: Session = { supervisor, output, planPanel: undefined };
  session = s;

  // Every command of package.json, by name: the type makes a missing handler a compile error.
  const handlers: Record<CommandName, () => unknown> = {
    restartServer: () => supervisor.restart(),
    showOutput: () => output.show(true),
    showPlan: () => showPlan(s),
  };
  for (const [name, handler] of Object.entries(handlers) as [CommandName, () => unknown][]) {
    context.subscriptions.push(vscode.commands.registerCommand(COMMANDS[name], handler));
  }

  context.subscriptions.push(
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (RESTART_SETTINGS.some((k) => e.affectsConfiguration(k))) {
        output.appendLine("[posh] the server's path or environment changed: restarting it");
        void supervisor.restart();
      } else if (LIVE_SETTINGS.some((k) => e.affectsConfiguration(k))) {
        void pushSettings(s);
      }
    }),
    // Trusting the workspace brings in its values of the restricted settings (server path, env).
    vscode.workspace.onDidGrantWorkspaceTrust(() => void supervisor.restart()),
    { dispose: () => void supervisor.dispose() },
    { dispose: () => s.planPanel?.dispose() },
  );

  void supervisor.ensureStarted();
}

/** Stops the server if one runs; never throws, whether or not a client ever started. */
export function deactivate(): Promise<void> | undefined {
  const s = session;
  session = undefined;
  return s?.supervisor.dispose();
}
