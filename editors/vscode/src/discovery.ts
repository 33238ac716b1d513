// Finding posh-lsp and posh-exec. Pure: the file system and the environment come in as a `Host`,
// so tests run it on a fake one. nodeHost() (below) is the real one.
//
// Order, for posh-lsp:
//   1. the setting `posh.server.path`, when set to something other than its default `posh-lsp`;
//   2. the environment variable POSH_LSP;
//   3. `server/posh-lsp` inside the extension, when a packager put one there;
//   4. PATH;
//   5. `$CARGO_HOME/bin` when CARGO_HOME is set, then `~/.cargo/bin` (where `cargo install` puts it).
// An explicit choice (1 or 2) that names no executable is an error of its own: the extension does
// not quietly run another binary than the one the user asked for.

import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

export interface Host {
  readonly platform: NodeJS.Platform;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly homedir: string;
  /** A regular file this process may execute. */
  isExecutable(file: string): boolean;
}

export interface ToolSpec {
  /** The program's name: `posh-lsp`. */
  readonly name: string;
  /** The setting naming it (`posh.server.path`), and its value. */
  readonly setting: string;
  readonly configured: string | undefined;
  /** The setting's default; a value equal to it means "find it". Defaults to `name`. */
  readonly settingDefault?: string;
  /** The environment variable naming it: `POSH_LSP`. */
  readonly envVar: string;
  /** A directory inside the extension that may hold the program. */
  readonly bundledDir?: string;
  /** What a relative configured path is relative to (the workspace folder). */
  readonly baseDir?: string;
}

export type Source = "setting" | "env" | "bundled" | "path" | "cargo";

/** One place looked at, for the message when nothing is found. */
export interface Attempt {
  readonly source: Source;
  readonly what: string;
}

export type Discovery =
  | { readonly found: true; readonly path: string; readonly source: Source; readonly tried: readonly Attempt[] }
  | { readonly found: false; readonly tried: readonly Attempt[]; readonly problem?: string };

function pathApi(host: Host): path.PlatformPath {
  return host.platform === "win32" ? path.win32 : path.posix;
}

/** The file names a program may have: `posh-lsp`, or on Windows `posh-lsp.exe`, ... */
function executableNames(host: Host, name: string): string[] {
  if (host.platform !== "win32" || path.win32.extname(name) !== "") {
    return [name];
  }
  const exts = (host.env["PATHEXT"] ?? ".EXE;.CMD;.BAT;.COM").split(";").filter((e) => e !== "");
  return [name, ...exts.map((e) => name + e.toLowerCase())];
}

function firstExecutable(host: Host, dir: string, name: string): string | undefined {
  const p = pathApi(host);
  for (const candidate of executableNames(host, name)) {
    const file = p.join(dir, candidate);
    if (host.isExecutable(file)) {
      return file;
    }
  }
  return undefined;
}

function pathVariable(host: Host): string | undefined {
  if (host.platform === "win32") {
    const key = Object.keys(host.env).find((k) => k.toUpperCase() === "PATH");
    return key === undefined ? undefined : host.env[key];
  }
  return host.env["PATH"];
}

/**
 * The program `name` on PATH, or undefined. Only absolute PATH entries count: a relative one
 * would depend on the extension host's working directory, and could name a workspace's file.
 */
export function findOnPath(host: Host, name: string): string | undefined {
  const p = pathApi(host);
  const delimiter = host.platform === "win32" ? ";" : ":";
  for (const dir of (pathVariable(host) ?? "").split(delimiter)) {
    if (dir === "" || !p.isAbsolute(dir)) {
      continue;
    }
    const found = firstExecutable(host, dir, name);
    if (found !== undefined) {
      return found;
    }
  }
  return undefined;
}

function expandHome(host: Host, value: string): string {
  const p = pathApi(host);
  if (value === "~") {
    return host.homedir;
  }
  if (value.startsWith("~/") || (host.platform === "win32" && value.startsWith("~\\"))) {
    return p.join(host.homedir, value.slice(2));
  }
  return value;
}

function hasSeparator(host: Host, value: string): boolean {
  return value.includes("/") || (host.platform === "win32" && value.includes("\\"));
}

/** An explicitly named program: a path (absolute, `~/...`, or relative to baseDir) or a bare name on PATH. */
function resolveExplicit(host: Host, value: string, baseDir: string | undefined): string | undefined {
  const p = pathApi(host);
  const expanded = expandHome(host, value);
  if (!hasSeparator(host, expanded)) {
    return findOnPath(host, expanded);
  }
  let file = expanded;
  if (!p.isAbsolute(file)) {
    if (baseDir === undefined) {
      return undefined;
    }
    file = p.resolve(baseDir, file);
  }
  if (host.isExecutable(file)) {
    return file;
  }
  // `C:\tools\posh-lsp` for `C:\tools\posh-lsp.exe`.
  return firstExecutable(host, p.dirname(file), p.basename(file));
}

/** Directories where `cargo install` puts binaries: `$CARGO_HOME/bin`, then `~/.cargo/bin`. */
export function cargoBinDirs(host: Host): string[] {
  const p = pathApi(host);
  const dirs: string[] = [];
  const cargoHome = host.env["CARGO_HOME"];
  if (cargoHome !== undefined && cargoHome !== "" && p.isAbsolute(cargoHome)) {
    dirs.push(p.join(cargoHome, "bin"));
  }
  const home = p.join(host.homedir, ".cargo", "bin");
  if (!dirs.includes(home)) {
    dirs.push(home);
  }
  return dirs;
}

export function discover(spec: ToolSpec, host: Host): Discovery {
  const tried: Attempt[] = [];
  const configured = spec.configured?.trim() ?? "";
  const settingDefault = spec.settingDefault ?? spec.name;

  // 1. The setting.
  if (configured !== "" && configured !== settingDefault) {
    tried.push({ source: "setting", what: `the setting ${spec.setting} ("${configured}")` });
    const file = resolveExplicit(host, configured, spec.baseDir);
    if (file !== undefined) {
      return { found: true, path: file, source: "setting", tried };
    }
    return {
      found: false,
      tried,
      problem: `The setting ${spec.setting} is "${configured}", which names no executable file.`,
    };
  }
  tried.push({ source: "setting", what: `the setting ${spec.setting} (left at its default)` });

  // 2. The environment.
  const fromEnv = host.env[spec.envVar]?.trim() ?? "";
  if (fromEnv !== "") {
    tried.push({ source: "env", what: `$${spec.envVar} ("${fromEnv}")` });
    const file = resolveExplicit(host, fromEnv, undefined);
    if (file !== undefined) {
      return { found: true, path: file, source: "env", tried };
    }
    return {
      found: false,
      tried,
      problem: `The environment variable ${spec.envVar} is "${fromEnv}", which names no executable file.`,
    };
  }
  tried.push({ source: "env", what: `$${spec.envVar} (not set)` });

  // 3. Inside the extension.
  if (spec.bundledDir !== undefined) {
    const p = pathApi(host);
    tried.push({ source: "bundled", what: p.join(spec.bundledDir, spec.name) });
    const file = firstExecutable(host, spec.bundledDir, spec.name);
    if (file !== undefined) {
      return { found: true, path: file, source: "bundled", tried };
    }
  }

  // 4. PATH.
  tried.push({ source: "path", what: `${spec.name} on PATH` });
  const onPath = findOnPath(host, spec.name);
  if (onPath !== undefined) {
    return { found: true, path: onPath, source: "path", tried };
  }

  // 5. Cargo's bin directories.
  for (const dir of cargoBinDirs(host)) {
    tried.push({ source: "cargo", what: pathApi(host).join(dir, spec.name) });
    const file = firstExecutable(host, dir, spec.name);
    if (file !== undefined) {
      return { found: true, path: file, source: "cargo", tried };
    }
  }
  return { found: false, tried };
}

/** The message shown when a program is not found: what was tried, in order. */
export function notFoundMessage(spec: ToolSpec, result: Discovery & { found: false }): string {
  const head = result.problem ?? `Could not find ${spec.name}.`;
  const tried = result.tried.map((a) => a.what).join("; ");
  return `${head} Tried: ${tried}.`;
}

/** The real host: this process's environment and file system. */
export function nodeHost(env: NodeJS.ProcessEnv = process.env): Host {
  return {
    platform: process.platform,
    env,
    homedir: os.homedir(),
    isExecutable(file: string): boolean {
      try {
        if (!fs.statSync(file).isFile()) {
          return false;
        }
        if (process.platform !== "win32") {
          fs.accessSync(file, fs.constants.X_OK);
        }
        return true;
      } catch {
        return false;
      }
    },
  };
}
