// Shared by the tests. After bundling, each test runs from out/test/, two levels below the
// extension's directory.

import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

export const EXT_DIR = path.resolve(__dirname, "..", "..");
/** The posh checkout the extension lives in (editors/vscode). */
export const REPO_DIR = path.resolve(EXT_DIR, "..", "..");

export interface Manifest {
  name: string;
  publisher: string;
  version: string;
  license: string;
  main: string;
  engines: { vscode: string };
  repository?: { url: string };
  activationEvents: string[];
  scripts: Record<string, string>;
  devDependencies: Record<string, string>;
  dependencies?: Record<string, string>;
  capabilities: {
    untrustedWorkspaces: { supported: boolean | "limited"; restrictedConfigurations?: string[] };
    virtualWorkspaces: boolean | { supported: boolean };
  };
  contributes: {
    languages: { id: string; extensions: string[]; configuration: string }[];
    grammars: { language: string; scopeName: string; path: string }[];
    commands: { command: string; title: string }[];
    menus: Record<string, { command: string }[]>;
    configuration: {
      properties: Record<string, { type: string; default: unknown; enum?: string[]; minimum?: number }>;
    };
  };
}

export function manifest(): Manifest {
  return JSON.parse(fs.readFileSync(path.join(EXT_DIR, "package.json"), "utf8")) as Manifest;
}

export function tempDir(prefix: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), `posh-vscode-${prefix}-`));
}

/** Writes an executable shell script. */
export function writeScript(file: string, body: string): string {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
  return file;
}

/**
 * A program built in this checkout or installed: the environment variable first, then
 * target/debug and target/release of the checkout. Undefined when there is none, and the test
 * that needs it is skipped (the reason printed).
 */
export function builtProgram(name: "posh-lsp" | "posh-exec", envVar: string): string | undefined {
  const candidates = [
    process.env[envVar],
    path.join(REPO_DIR, "target", "debug", name),
    path.join(REPO_DIR, "target", "release", name),
  ];
  for (const c of candidates) {
    if (c !== undefined && c !== "") {
      try {
        fs.accessSync(c, fs.constants.X_OK);
        if (fs.statSync(c).isFile()) {
          return c;
        }
      } catch {
        // next
      }
    }
  }
  return undefined;
}
