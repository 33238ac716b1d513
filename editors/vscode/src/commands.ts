// The commands the extension contributes (package.json `contributes.commands`). extension.ts
// registers a handler for every entry of this table (its type makes a missing one a compile
// error), and test/manifest.test.ts checks the table against package.json both ways.

export const COMMANDS = {
  restartServer: "posh.restartServer",
  showOutput: "posh.showOutput",
  showPlan: "posh.showPlan",
} as const;

export type CommandName = keyof typeof COMMANDS;
export type CommandId = (typeof COMMANDS)[CommandName];

export const COMMAND_IDS: readonly CommandId[] = Object.values(COMMANDS);
