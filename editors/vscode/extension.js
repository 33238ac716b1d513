// posh for VS Code: starts posh-lsp for shell scripts and posh annotation files. Inlay hints
// show where each command runs and what each pipe moves; hover explains a command's placement;
// a code lens per pipeline compares what bash and posh move.
"use strict";

const vscode = require("vscode");
const { LanguageClient, TransportKind } = require("vscode-languageclient/node");

let client;

function activate(context) {
  const config = vscode.workspace.getConfiguration("posh");
  const command = config.get("server.path", "posh-lsp");
  const serverOptions = {
    run: { command, transport: TransportKind.stdio },
    debug: { command, transport: TransportKind.stdio },
  };
  const clientOptions = {
    documentSelector: [
      { scheme: "file", language: "shellscript" },
      { scheme: "file", language: "posh" },
    ],
    initializationOptions: {
      maxMovedBytes: config.get("maxMovedBytes", 100000000),
      placement: config.get("placement", "cost-based"),
      copiesPerMount: config.get("copiesPerMount", 1),
    },
    synchronize: {
      configurationSection: "posh",
      fileEvents: [
        vscode.workspace.createFileSystemWatcher("**/posh.toml"),
        vscode.workspace.createFileSystemWatcher("**/*.posh"),
      ],
    },
  };
  client = new LanguageClient("posh", "posh", serverOptions, clientOptions);
  context.subscriptions.push({ dispose: () => client && client.stop() });
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
