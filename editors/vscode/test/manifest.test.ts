import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, it } from "node:test";
import { COMMAND_IDS, COMMANDS } from "../src/commands";
import { RESTRICTED_SETTING_KEYS } from "../src/settings";
import { EXT_DIR, manifest } from "./helpers";

const m = manifest();

describe("package.json", () => {
  it("contributes exactly the commands the code registers", () => {
    const contributed = m.contributes.commands.map((c) => c.command).sort();
    assert.deepEqual(contributed, [...COMMAND_IDS].sort());
    assert.deepEqual(contributed, ["posh.restartServer", "posh.showOutput", "posh.showPlan"]);
    for (const c of m.contributes.commands) {
      assert.ok(c.title.length > 0, `${c.command} has a title`);
    }
  });

  it("registers every command through the COMMANDS table in extension.ts", () => {
    const glue = fs.readFileSync(path.join(EXT_DIR, "src", "extension.ts"), "utf8");
    // One registerCommand call, over a handler table typed by the command names.
    assert.equal([...glue.matchAll(/registerCommand\(/g)].length, 1);
    assert.match(glue, /registerCommand\(COMMANDS\[name\], handler\)/);
    assert.match(glue, /const handlers: Record<CommandName, /);
    for (const name of Object.keys(COMMANDS)) {
      assert.match(glue, new RegExp(`^\\s+${name}: `, "m"), `no handler for ${name}`);
    }
  });

  it("names only contributed commands in its menus", () => {
    for (const [menu, items] of Object.entries(m.contributes.menus)) {
      for (const item of items) {
        assert.ok(COMMAND_IDS.includes(item.command as never), `${menu}: ${item.command}`);
      }
    }
  });

  it("points main at the bundle and pins vscode's types to engines.vscode", () => {
    assert.equal(m.main, "./dist/extension.js");
    assert.equal(m.engines.vscode, `^${m.devDependencies["@types/vscode"]}`);
  });

  it("pins every dependency and ships none: the bundle holds them", () => {
    assert.equal(m.dependencies, undefined);
    for (const [name, version] of Object.entries(m.devDependencies)) {
      assert.match(version, /^\d+\.\d+\.\d+$/, `${name}@${version} is not pinned`);
    }
    assert.match(m.devDependencies["vscode-languageclient"] ?? "", /^9\./);
    assert.ok(m.devDependencies["@vscode/vsce"]);
    const lock = JSON.parse(fs.readFileSync(path.join(EXT_DIR, "package-lock.json"), "utf8")) as {
      name: string;
      lockfileVersion: number;
      packages: Record<string, { version?: string; devDependencies?: Record<string, string> }>;
    };
    assert.equal(lock.name, m.name);
    assert.ok(lock.lockfileVersion >= 2);
    assert.deepEqual(lock.packages[""]?.devDependencies, m.devDependencies, "package-lock.json is stale: run npm install");
    for (const [name, version] of Object.entries(m.devDependencies)) {
      assert.equal(lock.packages[`node_modules/${name}`]?.version, version, name);
    }
  });

  it("has the scripts CI uses", () => {
    for (const script of ["build", "check", "test", "package"]) {
      assert.ok(m.scripts[script], script);
    }
    assert.match(m.scripts["check"] ?? "", /\btsc\b/);
    assert.match(m.scripts["vscode:prepublish"] ?? "", /--production/);
  });

  it("has what vsce asks for when it is missing", () => {
    // No repository link while the project has no public URL (the root Cargo.toml's
    // `repository` is a placeholder): ci.sh packages with --allow-missing-repository.
    assert.ok(m.publisher && m.license);
    assert.equal(m.repository, undefined);
    assert.match(m.scripts["package"] ?? "", /--allow-missing-repository/);
    assert.equal(m.license, "MIT OR Apache-2.0");
    const license = fs.readFileSync(path.join(EXT_DIR, "LICENSE"), "utf8");
    assert.match(license, /MIT License/);
    assert.match(license, /Copyright \(c\) the posh authors/);
    assert.match(license, /Apache License\s+Version 2\.0/);
  });

  it("limits untrusted workspaces and refuses virtual ones", () => {
    const untrusted = m.capabilities.untrustedWorkspaces;
    assert.equal(untrusted.supported, "limited");
    const restricted = untrusted.restrictedConfigurations ?? [];
    assert.deepEqual([...restricted].sort(), RESTRICTED_SETTING_KEYS.map((k) => `posh.${k}`).sort());
    for (const key of restricted) {
      assert.ok(key in m.contributes.configuration.properties, key);
    }
    const virtual = m.capabilities.virtualWorkspaces;
    assert.equal(typeof virtual === "boolean" ? virtual : virtual.supported, false);
  });

  it("contributes the posh language with its configuration and grammar", () => {
    const lang = m.contributes.languages.find((l) => l.id === "posh");
    assert.ok(lang);
    assert.deepEqual(lang.extensions, [".posh"]);
    const config = JSON.parse(fs.readFileSync(path.join(EXT_DIR, lang.configuration), "utf8")) as {
      comments: { lineComment: string };
    };
    assert.equal(config.comments.lineComment, "#");
    const grammar = m.contributes.grammars.find((g) => g.language === "posh");
    assert.ok(grammar);
    const tm = JSON.parse(fs.readFileSync(path.join(EXT_DIR, grammar.path), "utf8")) as { scopeName: string };
    assert.equal(tm.scopeName, grammar.scopeName);
    assert.deepEqual(m.activationEvents.sort(), ["onLanguage:posh", "onLanguage:shellscript"]);
  });

  it("ships only the bundle and the contributed files (.vscodeignore)", () => {
    const lines = fs
      .readFileSync(path.join(EXT_DIR, ".vscodeignore"), "utf8")
      .split("\n")
      .map((l) => l.trim())
      .filter((l) => l !== "" && !l.startsWith("#"));
    assert.equal(lines[0], "**", "everything is left out first");
    const kept = lines.filter((l) => l.startsWith("!")).map((l) => l.slice(1));
    for (const p of kept) {
      assert.ok(!p.includes("node_modules") && !p.startsWith("src") && !p.startsWith("test"), p);
    }
    for (const p of ["dist/extension.js", "package.json", "LICENSE", "language-configuration.json", "syntaxes/**"]) {
      assert.ok(kept.includes(p), `${p} is not shipped`);
    }
    // The README ships through --readme-path (package-readme.mjs's copy, less the screenshot that
    // lies outside the extension); naming README.md here too would put two in the .vsix.
    assert.ok(!kept.includes("README.md"), "README.md comes through --readme-path, not .vscodeignore");
    const manifest = JSON.parse(fs.readFileSync(path.join(EXT_DIR, "package.json"), "utf8"));
    assert.match(manifest.scripts.package, /node package-readme\.mjs && .*--readme-path out\/README\.md/);
    assert.ok(lines.includes("dist/**/*.map"), "source maps stay out");
  });
});
