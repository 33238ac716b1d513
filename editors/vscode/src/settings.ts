// The extension's settings and what they become for posh-lsp and posh-exec. No vscode import:
// the glue passes a reader over `workspace.getConfiguration("posh")`.

import * as path from "node:path";
//
// posh-lsp reads `{"maxMovedBytes": N, "copiesPerMount": N, "placement": "cost-based" | "greedy",
// "run": [{"script", "args", "env"}]}` from `initializationOptions` and from `workspace/didChangeConfiguration` (at the top level or
// under `posh`), keeping its current value for anything it cannot read
// (posh-lsp/src/ide/world.rs, `Settings::update`). The client always sends all three, a value the
// server would not take replaced by the default, so the server's state follows the settings.
// `run` is posh.toml's `[[run]]` tables as a list: what a script is run with, so the editor plans
// its words with those values; "posh: Show Plan" runs `posh-exec --explain` with them too.

/** The settings posh-lsp reads, each `posh.<key>` in package.json. */
export const SERVER_SETTING_KEYS = ["maxMovedBytes", "copiesPerMount", "placement", "run"] as const;
export type ServerSettingKey = (typeof SERVER_SETTING_KEYS)[number];

export const PLACEMENTS = ["cost-based", "greedy"] as const;
export type Placement = (typeof PLACEMENTS)[number];

export interface ServerSettings {
  /** A pipeline predicted to move more bytes than this gets `S003`. */
  maxMovedBytes: number;
  /** posh-exec's `--copies-per-mount`, at least 1. */
  copiesPerMount: number;
  /** posh-exec's `--placement`. */
  placement: Placement;
  /** What scripts are run with (a relative `script` is relative to the workspace folder). */
  run: RunSetting[];
}

/** One entry of `posh.run`, as a `[[run]]` table of posh.toml. */
export interface RunSetting {
  script: string;
  args: string[];
  env: Record<string, string>;
}

/** Mirrors posh-lsp's `Settings::default()` and package.json's defaults (a test checks both). */
export const SERVER_SETTING_DEFAULTS: Readonly<ServerSettings> = Object.freeze({
  maxMovedBytes: 100_000_000,
  copiesPerMount: 1,
  placement: "cost-based",
  run: [],
});

/** Settings of the extension itself, besides those handed to the server. */
export const CLIENT_SETTING_KEYS = ["server.path", "server.extraEnv", "exec.path", "trace.server"] as const;

/**
 * Settings that choose what program runs, with what environment: package.json declares them
 * `restrictedConfigurations`, and in an untrusted workspace the extension reads only the user's
 * values of them (VS Code does too; the extension does not rely on it).
 */
export const RESTRICTED_SETTING_KEYS = ["server.path", "server.extraEnv", "exec.path"] as const;

/** Reads one key of the `posh` section (what `WorkspaceConfiguration.get` returns). */
export type SettingReader = (key: string) => unknown;

function nonNegativeInteger(value: unknown): number | undefined {
  // The server parses a JSON unsigned integer: 1.5, -1 or 1e300 would be ignored by it.
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0) {
    return undefined;
  }
  const n = Math.floor(value);
  return Number.isSafeInteger(n) ? n : undefined;
}

/** `posh.run`: the well-formed entries (a script named, arguments all strings, an environment of
 * strings); posh-lsp would refuse a list holding any other. */
export function readRuns(value: unknown): RunSetting[] {
  if (!Array.isArray(value)) {
    return [];
  }
  const runs: RunSetting[] = [];
  for (const entry of value as unknown[]) {
    if (typeof entry !== "object" || entry === null || Array.isArray(entry)) {
      continue;
    }
    const { script, args, env } = entry as Record<string, unknown>;
    if (typeof script !== "string" || script === "") {
      continue;
    }
    if (args !== undefined && !(Array.isArray(args) && args.every((a) => typeof a === "string"))) {
      continue;
    }
    const isEnv = (e: unknown) =>
      typeof e === "object" && e !== null && !Array.isArray(e) && Object.values(e).every((v) => typeof v === "string");
    if (env !== undefined && !isEnv(env)) {
      continue;
    }
    runs.push({ script, args: [...((args as string[]) ?? [])], env: { ...((env as Record<string, string>) ?? {}) } });
  }
  return runs;
}

/** The run `posh.run` gives the script at `script` (absolute), `cwd` being the workspace folder. */
export function runFor(settings: ServerSettings, script: string, cwd: string): RunSetting | undefined {
  const wanted = path.resolve(cwd, script);
  return settings.run.find((r) => path.resolve(cwd, r.script) === wanted);
}

/** The server settings, each valid: an invalid value falls back to its default. */
export function readServerSettings(read: SettingReader): ServerSettings {
  const maxMovedBytes = nonNegativeInteger(read("maxMovedBytes")) ?? SERVER_SETTING_DEFAULTS.maxMovedBytes;
  const copies = nonNegativeInteger(read("copiesPerMount"));
  const copiesPerMount = copies !== undefined && copies >= 1 ? copies : SERVER_SETTING_DEFAULTS.copiesPerMount;
  const placementValue = read("placement");
  const placement = PLACEMENTS.find((p) => p === placementValue) ?? SERVER_SETTING_DEFAULTS.placement;
  return { maxMovedBytes, copiesPerMount, placement, run: readRuns(read("run")) };
}

/** `initializationOptions` of the `initialize` request. */
export function initializationOptions(settings: ServerSettings): ServerSettings {
  return { ...settings };
}

/** The `settings` of a `workspace/didChangeConfiguration` notification: the `posh` section. */
export function didChangeConfigurationSettings(settings: ServerSettings): { posh: ServerSettings } {
  return { posh: { ...settings } };
}

/** Arguments of `posh-exec` printing a script's plan as Graphviz dot, planned as the hints are:
 * with the arguments of its `run`, if it has one. */
export function explainArgs(settings: ServerSettings, script: string, run?: RunSetting): string[] {
  return [
    "--explain",
    "--format",
    "dot",
    "--placement",
    settings.placement,
    "--copies-per-mount",
    String(settings.copiesPerMount),
    // Everything after the script belongs to it; `--` is not needed, but a script name that
    // starts with `-` must not read as an option: make it a path.
    script.startsWith("-") ? `./${script}` : script,
    ...(run?.args ?? []),
  ];
}

/** `posh.server.extraEnv`: only string values of a plain object are kept. */
export function readExtraEnv(value: unknown): Record<string, string> {
  const env: Record<string, string> = {};
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return env;
  }
  for (const [name, v] of Object.entries(value as Record<string, unknown>)) {
    if (name !== "" && !name.includes("=") && typeof v === "string") {
      env[name] = v;
    }
  }
  return env;
}

/** Whether a change of these settings needs a new server process (a new binary or environment). */
export const RESTART_SETTINGS = ["posh.server.path", "posh.server.extraEnv"] as const;

/** Settings the running server takes through `workspace/didChangeConfiguration`. */
export const LIVE_SETTINGS = SERVER_SETTING_KEYS.map((k) => `posh.${k}`);
