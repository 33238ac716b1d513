// What the extension says to the user, apart from the glue so that tests can read it.

export const OPEN_SETTINGS = "Open Settings";
export const HOW_TO_INSTALL = "How to install";
export const SHOW_OUTPUT = "Show Output";
export const COPY_COMMAND = "Copy Command";

export interface InstallHelp {
  readonly message: string;
  readonly detail: string;
  /** What "Copy Command" copies. */
  readonly command: string;
}

export function installHelp(program: "posh-lsp" | "posh-exec"): InstallHelp {
  const command = `cargo install --path ${program}`;
  return {
    message: `How to install ${program}`,
    detail:
      `${program} is built from a checkout of posh with Rust's cargo. In the checkout's top directory run\n\n` +
      `    ${command}\n\n` +
      `which puts ${program} in ~/.cargo/bin, where this extension looks for it. ` +
      `Or point the setting ${program === "posh-lsp" ? "posh.server.path" : "posh.exec.path"} ` +
      `(or the environment variable ${program === "posh-lsp" ? "POSH_LSP" : "POSH_EXEC"}) at a binary you built, ` +
      `such as target/release/${program}.`,
    command,
  };
}

/** `Error: x` → `x`, anything else as text. */
export function describeError(error: unknown): string {
  if (error instanceof Error) {
    return error.message;
  }
  return String(error);
}
