// Running a program to completion, with input, a time limit and a cap on what it prints.

import { spawn } from "node:child_process";

export interface RunOptions {
  readonly cwd: string;
  /** Written to standard input, which is then closed; without it standard input is empty. */
  readonly input?: string;
  readonly env?: NodeJS.ProcessEnv;
  readonly timeoutMs: number;
  /** Output beyond this many bytes (per stream) fails the run. */
  readonly maxBytes?: number;
}

export interface RunResult {
  /** The exit status, or null when a signal ended it. */
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
  /** Why it could not run, or was stopped: not found, timed out, printed too much. */
  readonly error?: string;
}

export type Runner = (program: string, args: readonly string[], options: RunOptions) => Promise<RunResult>;

const DEFAULT_MAX_BYTES = 64 * 1024 * 1024;

export const runProcess: Runner = (program, args, options) =>
  new Promise<RunResult>((resolve) => {
    const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let outBytes = 0;
    let errBytes = 0;
    let failure: string | undefined;
    let settled = false;

    const child = spawn(program, [...args], {
      cwd: options.cwd,
      env: options.env ?? process.env,
      stdio: ["pipe", "pipe", "pipe"],
      shell: false,
      windowsHide: true,
    });
    const timer = setTimeout(() => {
      failure ??= `${program} did not finish within ${Math.round(options.timeoutMs / 1000)} s`;
      child.kill("SIGKILL");
    }, options.timeoutMs);

    const finish = (result: Omit<RunResult, "error">): void => {
      if (settled) {
        return;
      }
      settled = true;
      clearTimeout(timer);
      resolve(failure === undefined ? result : { ...result, error: failure });
    };

    child.stdout.on("data", (chunk: Buffer) => {
      outBytes += chunk.length;
      if (outBytes > maxBytes) {
        failure ??= `${program} printed more than ${maxBytes} bytes`;
        child.kill("SIGKILL");
      } else {
        out.push(chunk);
      }
    });
    child.stderr.on("data", (chunk: Buffer) => {
      errBytes += chunk.length;
      if (errBytes <= maxBytes) {
        err.push(chunk);
      }
    });
    child.on("error", (e: Error) => {
      failure ??= `${program} could not be run: ${e.message}`;
      finish({ code: null, signal: null, stdout: "", stderr: Buffer.concat(err).toString("utf8") });
    });
    child.on("close", (code, signal) => {
      finish({
        code,
        signal,
        stdout: Buffer.concat(out).toString("utf8"),
        stderr: Buffer.concat(err).toString("utf8"),
      });
    });
    // A program that exits without reading its input makes the write fail with EPIPE: that is
    // its business, its exit status tells.
    child.stdin.on("error", () => undefined);
    child.stdin.end(options.input ?? "");
  });
