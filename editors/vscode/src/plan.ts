// "posh: Show Plan": `posh-exec --explain --format dot SCRIPT`, then Graphviz `dot -Tsvg` when it
// is installed. No vscode import; the programs run through a `Runner`, a fake one in tests.

import type { Runner } from "./process";
import { explainArgs, runFor, type ServerSettings } from "./settings";

export interface PlanRequest {
  /** posh-exec, as found by discover(). */
  readonly execPath: string;
  /** Graphviz's dot, when it is on PATH. */
  readonly dotPath: string | undefined;
  /** The script's path. */
  readonly script: string;
  /** The workspace folder: posh-exec finds posh.toml from there and resolves relative paths. */
  readonly cwd: string;
  readonly settings: ServerSettings;
  readonly env?: NodeJS.ProcessEnv;
  readonly timeoutMs?: number;
}

export type PlanOutcome =
  /** The picture, with its dot source. `warnings`: what posh-exec printed on stderr. */
  | { readonly kind: "svg"; readonly svg: string; readonly dot: string; readonly warnings: string }
  /** The dot text only: Graphviz is missing (`reason: "no-graphviz"`) or failed. */
  | {
      readonly kind: "dot";
      readonly dot: string;
      readonly warnings: string;
      readonly reason: "no-graphviz" | "dot-failed";
      readonly detail: string;
    }
  /** posh-exec printed no plan. */
  | { readonly kind: "error"; readonly message: string; readonly detail: string };

const DEFAULT_TIMEOUT_MS = 30_000;

function firstLine(text: string): string {
  return text.trim().split(/\r?\n/, 1)[0] ?? "";
}

export async function computePlan(request: PlanRequest, run: Runner): Promise<PlanOutcome> {
  const timeoutMs = request.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  // The script's `posh.run`: its arguments after it, its variables in posh-exec's environment,
  // as the hints plan with them.
  const scriptRun = runFor(request.settings, request.script, request.cwd);
  const args = explainArgs(request.settings, request.script, scriptRun);
  const env = scriptRun ? { ...(request.env ?? process.env), ...scriptRun.env } : request.env;
  const explained = await run(request.execPath, args, { cwd: request.cwd, env, timeoutMs });
  const commandLine = [request.execPath, ...args].join(" ");
  if (explained.error !== undefined) {
    return { kind: "error", message: explained.error, detail: `${commandLine}\n${explained.stderr}` };
  }
  const dot = explained.stdout;
  if (!/^\s*(strict\s+)?(di)?graph\b/i.test(dot)) {
    // Exit status 2 with no plan: the script cannot be read, or posh.toml has an error.
    const why = firstLine(explained.stderr) || `exit status ${explained.code ?? explained.signal ?? "unknown"}`;
    return {
      kind: "error",
      message: `posh-exec --explain printed no plan: ${why}`,
      detail: `${commandLine}\n${explained.stderr}${dot}`,
    };
  }
  // Exit status 2 with a plan: a syntax error, the pipelines before it explained.
  const warnings = explained.stderr.trim();
  if (request.dotPath === undefined) {
    return { kind: "dot", dot, warnings, reason: "no-graphviz", detail: "Graphviz's dot is not on PATH." };
  }
  const rendered = await run(request.dotPath, ["-Tsvg"], {
    cwd: request.cwd,
    input: dot,
    env: request.env,
    timeoutMs,
  });
  const svgStart = rendered.stdout.search(/<svg[\s>]/);
  if (rendered.error !== undefined || rendered.code !== 0 || svgStart < 0) {
    const why =
      rendered.error ?? (firstLine(rendered.stderr) || `exit status ${rendered.code ?? rendered.signal ?? "unknown"}`);
    return { kind: "dot", dot, warnings, reason: "dot-failed", detail: `dot -Tsvg failed: ${why}` };
  }
  return { kind: "svg", svg: rendered.stdout, dot, warnings };
}
