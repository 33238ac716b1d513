// The TextMate grammar, run by the same engine VS Code runs (vscode-textmate with Oniguruma).

import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { before, describe, it } from "node:test";
import * as oniguruma from "vscode-oniguruma";
import * as textmate from "vscode-textmate";
import { EXT_DIR, REPO_DIR } from "./helpers";

interface Token {
  readonly text: string;
  readonly start: number;
  readonly scopes: readonly string[];
}

let grammar: textmate.IGrammar;

async function loadGrammar(): Promise<textmate.IGrammar> {
  const wasm = fs.readFileSync(path.join(EXT_DIR, "node_modules", "vscode-oniguruma", "release", "onig.wasm"));
  await oniguruma.loadWASM(wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength));
  const registry = new textmate.Registry({
    onigLib: Promise.resolve({
      createOnigScanner: (patterns: string[]) => new oniguruma.OnigScanner(patterns),
      createOnigString: (s: string) => new oniguruma.OnigString(s),
    }),
    loadGrammar: async (scopeName: string) => {
      if (scopeName !== "source.posh") {
        return null; // source.shell, embedded in examples, is VS Code's own
      }
      const file = path.join(EXT_DIR, "syntaxes", "posh.tmLanguage.json");
      return textmate.parseRawGrammar(fs.readFileSync(file, "utf8"), file);
    },
  });
  const g = await registry.loadGrammar("source.posh");
  assert.ok(g, "the grammar loads");
  return g;
}

function tokenize(text: string): Token[][] {
  let stack = textmate.INITIAL;
  return text.split("\n").map((line) => {
    const r = grammar.tokenizeLine(line, stack);
    stack = r.ruleStack;
    return r.tokens.map((t) => ({ text: line.slice(t.startIndex, t.endIndex), start: t.startIndex, scopes: t.scopes }));
  });
}

/** The scopes of the token at the `nth` occurrence of `needle` in line `line`. */
function scopesAt(lines: Token[][], line: number, needle: string, nth = 0): readonly string[] {
  const tokens = lines[line] ?? [];
  const text = tokens.map((t) => t.text).join("");
  let at = -1;
  for (let i = 0; i <= nth; i++) {
    at = text.indexOf(needle, at + 1);
    assert.ok(at >= 0, `${JSON.stringify(needle)} (#${nth}) not in line ${line}: ${text}`);
  }
  const token = tokens.find((t) => t.start <= at && at < t.start + t.text.length);
  assert.ok(token);
  assert.equal(token.text.includes(needle) || needle.includes(token.text), true, `token ${JSON.stringify(token.text)} vs ${needle}`);
  return token.scopes;
}

function hasScope(scopes: readonly string[], prefix: string): boolean {
  return scopes.some((s) => s === prefix || s.startsWith(`${prefix}.`));
}

function assertScope(lines: Token[][], line: number, needle: string, scope: string, nth = 0): void {
  const scopes = scopesAt(lines, line, needle, nth);
  assert.ok(hasScope(scopes, scope), `${JSON.stringify(needle)} in line ${line}: expected ${scope}, got ${scopes.join(" ")}`);
}

const BLOCK = `# tar: one entry per mode
tar[filters_input, merge:concat, output_ratio:0.5]:
- FLAGS:
  - short:c, long:create, required   # must be given
  - short:z, long:gzip, desc:"compress \\"gzip\\" # not a comment"
- OPTPARAMS:
  - short:f, long:file, type:output_file, size:1
  - short:d, long:delimiter, type:str, size:list(list_separator:(,))
- PARAMS:
  - type:input_file, size:list, splittable
  - type:inputfile, size:specific_size(size:2,list_separator:( ))
- EXAMPLES:
  - tar -czf out.tar.gz input/ # type:str
  # a comment among examples
  - tar -cf x.tar a
git status[needs_current_dir, reads_env:"GIT_DIR", no_match_status:1]:
- PARAMS:
  - type:str, size:list
`;

describe("the posh grammar", () => {
  before(async () => {
    grammar = await loadGrammar();
  });

  it("scopes the block layout", () => {
    const l = tokenize(BLOCK);
    assertScope(l, 0, "# tar", "comment.line.number-sign.posh");
    assertScope(l, 1, "tar", "entity.name.function.command.posh");
    assertScope(l, 1, "filters_input", "storage.modifier.command-option.posh");
    assertScope(l, 1, "merge", "storage.modifier.command-option.posh");
    assertScope(l, 1, "concat", "support.constant.merge.posh");
    assertScope(l, 1, "0.5", "constant.numeric.posh");
    assertScope(l, 2, "FLAGS", "keyword.control.section.posh");
    assertScope(l, 3, "short", "keyword.other.field.posh");
    assertScope(l, 3, "c", "constant.other.option.posh", 1);
    assertScope(l, 3, "create", "constant.other.option.posh");
    assertScope(l, 3, "required", "keyword.other.field.posh");
    assertScope(l, 3, "# must", "comment.line.number-sign.posh");
    assertScope(l, 4, "desc", "keyword.other.field.posh");
    assertScope(l, 4, '\\"', "constant.character.escape.posh");
    assertScope(l, 4, "# not a comment", "string.quoted.double.posh");
    assertScope(l, 5, "OPTPARAMS", "keyword.control.section.posh");
    assertScope(l, 6, "output_file", "support.type.posh");
    assertScope(l, 6, "1", "constant.numeric.posh");
    assertScope(l, 7, "str", "support.type.posh");
    assertScope(l, 7, "list", "support.constant.size.posh");
    assertScope(l, 7, "list_separator", "support.constant.size.posh");
    assertScope(l, 7, ",", "string.unquoted.separator.posh", 3);
    assertScope(l, 9, "input_file", "support.type.posh");
    assertScope(l, 9, "splittable", "keyword.other.field.posh");
    assertScope(l, 10, "inputfile", "invalid.illegal.type.posh");
    assertScope(l, 10, "specific_size", "support.constant.size.posh");
    assertScope(l, 10, "size", "keyword.other.field.posh", 2);
    assertScope(l, 10, "2", "constant.numeric.posh");
    assertScope(l, 11, "EXAMPLES", "keyword.control.section.posh");
    // Examples are shell command lines: no fields, no comments of the annotation language.
    assertScope(l, 12, "tar -czf", "meta.embedded.line.shell");
    assertScope(l, 12, "type:str", "meta.embedded.line.shell");
    assert.ok(!hasScope(scopesAt(l, 12, "type:str"), "keyword.other.field.posh"));
    assert.ok(!hasScope(scopesAt(l, 12, "type:str"), "comment.line.number-sign.posh"));
    assertScope(l, 13, "# a comment", "comment.line.number-sign.posh");
    assertScope(l, 14, "tar -cf", "meta.embedded.line.shell");
    // The examples end at the next entry.
    assertScope(l, 15, "git status", "entity.name.function.command.posh");
    assert.ok(!hasScope(scopesAt(l, 15, "git status"), "meta.section.examples.posh"));
    assertScope(l, 15, "needs_current_dir", "storage.modifier.command-option.posh");
    assertScope(l, 15, '"GIT_DIR"', "string.quoted.double.posh");
    assertScope(l, 15, "1", "constant.numeric.posh");
    assertScope(l, 17, "type", "keyword.other.field.posh");
  });

  it("scopes the one-line layout, nested parentheses and all", () => {
    const l = tokenize(
      [
        "cat: PARAMS:[(splittable,type:input_file,size:list(list_separator:( ))),]",
        "grep[splittable_across_input,reduces_input]: FLAGS:[(short:v,long:invert-match)] PARAMS:[(type:str,size:1),(type:input_file,size:list(list_separator:( )))]",
        "pr: FLAGS:[(short:m,long:merge),(short:t)] OPTPARAMS:[(short:s,type:str,size:1,attached)] BOGUS:[]",
      ].join("\n"),
    );
    assertScope(l, 0, "cat", "entity.name.function.command.posh");
    assertScope(l, 0, "PARAMS", "keyword.control.section.posh");
    assertScope(l, 0, "splittable", "keyword.other.field.posh");
    assertScope(l, 0, " ", "string.unquoted.separator.posh", 1);
    assertScope(l, 1, "grep", "entity.name.function.command.posh");
    assertScope(l, 1, "reduces_input", "storage.modifier.command-option.posh");
    assertScope(l, 1, "invert-match", "constant.other.option.posh");
    assertScope(l, 1, "PARAMS", "keyword.control.section.posh");
    // After `size:1),` the next argument's fields are fields again.
    assertScope(l, 1, "type", "keyword.other.field.posh", 1);
    assertScope(l, 1, "input_file", "support.type.posh");
    assertScope(l, 2, "merge", "constant.other.option.posh");
    assertScope(l, 2, "OPTPARAMS", "keyword.control.section.posh");
    assertScope(l, 2, "attached", "keyword.other.field.posh");
    assertScope(l, 2, "BOGUS", "invalid.illegal.section.posh");
  });

  it("gives every keyword of the language reference its scope", (t) => {
    const doc = path.join(REPO_DIR, "docs", "annotation-language.md");
    if (!fs.existsSync(doc)) {
      t.skip(`${doc} not found: not in a posh checkout`);
      return;
    }
    const text = fs.readFileSync(doc, "utf8");
    const table = text.slice(text.indexOf("<!-- keywords:start"), text.indexOf("<!-- keywords:end"));
    const groups = new Map<string, string[]>();
    let current = "";
    for (const line of table.split("\n")) {
      const heading = /^### (.+)$/.exec(line);
      if (heading) {
        current = heading[1] ?? "";
        groups.set(current, []);
      } else if (line.startsWith("| `")) {
        const first = line.split("|")[1] ?? "";
        groups.get(current)?.push(...[...first.matchAll(/`([^`]+)`/g)].map((m) => m[1] ?? ""));
      }
    }
    assert.deepEqual([...groups.keys()], ["Sections", "Command options", "Argument fields", "Types", "Sizes", "Merge steps"]);
    const cases: [string, string, string][] = []; // keyword, line, scope
    for (const kw of groups.get("Sections") ?? []) {
      cases.push([kw, `- ${kw}:`, "keyword.control.section.posh"]);
    }
    for (const kw of groups.get("Command options") ?? []) {
      cases.push([kw, `cmd[${kw}]:`, "storage.modifier.command-option.posh"]);
    }
    for (const kw of groups.get("Argument fields") ?? []) {
      cases.push([kw, `  - ${kw}:x`, "keyword.other.field.posh"]);
    }
    for (const kw of groups.get("Types") ?? []) {
      cases.push([kw, `  - type:${kw}`, "support.type.posh"]);
    }
    for (const kw of groups.get("Sizes") ?? []) {
      cases.push([kw, kw === "list_separator" ? `  - size:list(${kw}:(,))` : `  - size:${kw}`, "support.constant.size.posh"]);
    }
    for (const kw of groups.get("Merge steps") ?? []) {
      cases.push([kw, `cmd[merge:${kw}]:`, "support.constant.merge.posh"]);
    }
    assert.ok(cases.length >= 45, `only ${cases.length} keywords read from the reference`);
    for (const [kw, line, scope] of cases) {
      const l = tokenize(line);
      const lastAt = line.lastIndexOf(kw);
      const nth = line.split(kw).length - 2;
      assert.ok(lastAt >= 0);
      assertScope(l, 0, kw, scope, nth);
    }
  });

  it("reads every shipped annotation file and the original layout without an invalid token", (t) => {
    const shipped = path.join(REPO_DIR, "annotations");
    if (!fs.existsSync(shipped)) {
      t.skip(`${shipped} not found: not in a posh checkout`);
      return;
    }
    const files = [
      ...fs
        .readdirSync(shipped)
        .filter((f) => f.endsWith(".posh"))
        .map((f) => path.join(shipped, f)),
      // The original one-line layout, kept beside the checkout (../shared/compat) when present.
      path.join(REPO_DIR, "..", "shared", "compat", "posh-original.posh"),
    ].filter((f) => fs.existsSync(f));
    let headers = 0;
    let options = 0;
    for (const file of files) {
      const lines = tokenize(fs.readFileSync(file, "utf8"));
      lines.forEach((tokens, i) => {
        const where = `${path.basename(file)}:${i + 1}`;
        for (const t of tokens) {
          assert.ok(!t.scopes.some((s) => s.startsWith("invalid")), `${where}: ${JSON.stringify(t.text)} is ${t.scopes.join(" ")}`);
        }
        const text = tokens.map((t) => t.text).join("");
        if (/^[^\s#-]/.test(text)) {
          headers++;
          assert.ok(hasScope(tokens[0]?.scopes ?? [], "entity.name.function.command.posh"), `${where}: ${text}`);
        }
        if (/^\s*#/.test(text)) {
          assert.ok(tokens.every((t) => t.text.trim() === "" || hasScope(t.scopes, "comment.line.number-sign.posh")), where);
        }
        for (const m of text.matchAll(/(?<![\w-])short:(\S)/g)) {
          if (!hasScope(scopesAt(lines, i, m[0]), "meta.embedded.line.shell")) {
            options++;
            const at = (m.index ?? 0) + "short:".length;
            const token = tokens.find((t) => t.start <= at && at < t.start + t.text.length);
            assert.ok(token && hasScope(token.scopes, "constant.other.option.posh"), `${where}: short:${m[1]}`);
          }
        }
      });
    }
    assert.ok(headers > 50, `${headers} entries`);
    assert.ok(options > 100, `${options} short options`);
  });
});
