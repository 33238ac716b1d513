// A fake of the parts of the `vscode` API that src/extension.ts uses, for running the glue in
// plain Node (esbuild.mjs --tests resolves `vscode` to this file). `fake` holds what the code did
// and what the test wants the user to do.

import { readFileSync } from "node:fs";
import * as path from "node:path";

export interface Disposable {
  dispose(): unknown;
}

type Listener<T> = (e: T) => unknown;

/** What VS Code returns for a setting nobody set: its default in package.json. */
const manifestDefaults: Record<string, unknown> = (() => {
  const manifest = JSON.parse(readFileSync(path.join(__dirname, "..", "..", "package.json"), "utf8")) as {
    contributes: { configuration: { properties: Record<string, { default?: unknown }> } };
  };
  const defaults: Record<string, unknown> = {};
  for (const [key, schema] of Object.entries(manifest.contributes.configuration.properties)) {
    defaults[key.replace(/^posh\./, "")] = schema.default;
  }
  return defaults;
})();

class Emitter<T> {
  private listeners: Listener<T>[] = [];
  readonly event = (listener: Listener<T>): Disposable => {
    this.listeners.push(listener);
    return { dispose: () => (this.listeners = this.listeners.filter((l) => l !== listener)) };
  };
  fire(e: T): void {
    for (const l of [...this.listeners]) {
      l(e);
    }
  }
  get count(): number {
    return this.listeners.length;
  }
}

export class Uri {
  private constructor(
    readonly scheme: string,
    readonly fsPath: string,
  ) {}
  static file(p: string): Uri {
    return new Uri("file", p);
  }
  static untitled(p: string): Uri {
    return new Uri("untitled", p);
  }
  toString(): string {
    return `${this.scheme}://${this.fsPath}`;
  }
}

export interface ShownMessage {
  readonly kind: "error" | "info";
  readonly message: string;
  readonly items: readonly string[];
  readonly detail?: string;
}

export interface FakeWebviewPanel {
  viewType: string;
  title: string;
  options: unknown;
  webview: { html: string };
  revealed: number;
  disposed: boolean;
  reveal(): void;
  onDidDispose(listener: () => void): Disposable;
  dispose(): void;
}

export interface FakeDocument {
  uri: Uri;
  isUntitled: boolean;
  isDirty: boolean;
  languageId: string;
}

export const fake = {
  /** The user's values of `posh.<key>`. */
  settings: new Map<string, unknown>(),
  /** The workspace's values, which win over the user's (VS Code's `get`, before any filtering). */
  workspaceSettings: new Map<string, unknown>(),
  trusted: true,
  commands: new Map<string, (...args: unknown[]) => unknown>(),
  executed: [] as { command: string; args: unknown[] }[],
  messages: [] as ShownMessage[],
  /** What the user clicks on the next messages, in order (undefined: dismisses it). */
  answers: [] as (string | undefined)[],
  output: [] as string[],
  outputShown: 0,
  clipboard: "",
  panels: [] as FakeWebviewPanel[],
  workspaceFolders: [] as { uri: Uri; name: string; index: number }[],
  activeTextEditor: undefined as { document: FakeDocument } | undefined,
  configChanged: new Emitter<{ affectsConfiguration(section: string): boolean }>(),
  trustGranted: new Emitter<void>(),
  reset(): void {
    this.settings.clear();
    this.workspaceSettings.clear();
    this.trusted = true;
    this.commands.clear();
    this.executed = [];
    this.messages = [];
    this.answers = [];
    this.output = [];
    this.outputShown = 0;
    this.clipboard = "";
    this.panels = [];
    this.workspaceFolders = [];
    this.activeTextEditor = undefined;
    this.configChanged = new Emitter();
    this.trustGranted = new Emitter();
  },
  /** Sets `posh.<key>` values and tells listeners, as the settings editor would. */
  changeSettings(values: Record<string, unknown>): void {
    for (const [k, v] of Object.entries(values)) {
      this.settings.set(k, v);
    }
    const changed = Object.keys(values).map((k) => `posh.${k}`);
    this.configChanged.fire({
      affectsConfiguration: (section: string) => changed.some((c) => c === section || c.startsWith(`${section}.`)),
    });
  },
};

function answer(kind: "error" | "info", message: string, items: string[], detail?: string): Promise<string | undefined> {
  fake.messages.push({ kind, message, items, ...(detail === undefined ? {} : { detail }) });
  return Promise.resolve(fake.answers.shift());
}

export const ViewColumn = { Active: -1, Beside: -2, One: 1, Two: 2 } as const;
export const ProgressLocation = { SourceControl: 1, Window: 10, Notification: 15 } as const;

export const window = {
  createOutputChannel(name: string) {
    return {
      name,
      append: (text: string) => fake.output.push(text),
      appendLine: (text: string) => fake.output.push(`${text}\n`),
      clear: () => undefined,
      show: () => void fake.outputShown++,
      hide: () => undefined,
      replace: () => undefined,
      dispose: () => undefined,
    };
  },
  showErrorMessage(message: string, ...items: string[]): Promise<string | undefined> {
    return answer("error", message, items);
  },
  showInformationMessage(message: string, ...rest: unknown[]): Promise<string | undefined> {
    let detail: string | undefined;
    if (typeof rest[0] === "object" && rest[0] !== null) {
      detail = (rest.shift() as { detail?: string }).detail;
    }
    return answer("info", message, rest as string[], detail);
  },
  get activeTextEditor() {
    return fake.activeTextEditor;
  },
  withProgress<R>(_options: unknown, task: () => Promise<R>): Promise<R> {
    return task();
  },
  createWebviewPanel(viewType: string, title: string, _column: unknown, options: unknown): FakeWebviewPanel {
    const disposed = new Emitter<void>();
    const panel: FakeWebviewPanel = {
      viewType,
      title,
      options,
      webview: { html: "" },
      revealed: 0,
      disposed: false,
      reveal() {
        panel.revealed++;
      },
      onDidDispose: (l) => disposed.event(l),
      dispose() {
        panel.disposed = true;
        disposed.fire();
      },
    };
    fake.panels.push(panel);
    return panel;
  },
};

export const commands = {
  registerCommand(id: string, handler: (...args: unknown[]) => unknown): Disposable {
    if (fake.commands.has(id)) {
      throw new Error(`command '${id}' already exists`);
    }
    fake.commands.set(id, handler);
    return { dispose: () => fake.commands.delete(id) };
  },
  async executeCommand(command: string, ...args: unknown[]): Promise<unknown> {
    fake.executed.push({ command, args });
    const handler = fake.commands.get(command);
    return handler === undefined ? undefined : handler(...args);
  },
};

export const workspace = {
  getConfiguration(section: string) {
    if (section !== "posh") {
      throw new Error(`the extension reads only the posh section, not ${section}`);
    }
    return {
      get<T>(key: string, defaultValue?: T): T | undefined {
        if (fake.workspaceSettings.has(key)) {
          return fake.workspaceSettings.get(key) as T;
        }
        if (fake.settings.has(key)) {
          return fake.settings.get(key) as T;
        }
        return key in manifestDefaults ? (manifestDefaults[key] as T) : defaultValue;
      },
      inspect(key: string) {
        return {
          key: `posh.${key}`,
          defaultValue: manifestDefaults[key],
          globalValue: fake.settings.get(key),
          workspaceValue: fake.workspaceSettings.get(key),
        };
      },
    };
  },
  get isTrusted() {
    return fake.trusted;
  },
  get workspaceFolders() {
    return fake.workspaceFolders.length === 0 ? undefined : fake.workspaceFolders;
  },
  getWorkspaceFolder(uri: Uri) {
    return fake.workspaceFolders.find((f) => uri.fsPath === f.uri.fsPath || uri.fsPath.startsWith(`${f.uri.fsPath}/`));
  },
  onDidChangeConfiguration(listener: Listener<{ affectsConfiguration(section: string): boolean }>): Disposable {
    return fake.configChanged.event(listener);
  },
  onDidGrantWorkspaceTrust(listener: Listener<void>): Disposable {
    return fake.trustGranted.event(listener);
  },
};

export const env = {
  clipboard: {
    async writeText(text: string): Promise<void> {
      fake.clipboard = text;
    },
  },
};
