#!/usr/bin/env bash
# CI for the VS Code extension: install the locked dependencies, type-check, bundle, run the unit
# tests, package the .vsix and check what it holds. Needs node (20 or later) and npm, nothing
# installed globally. The tests that drive the real posh-lsp and posh-exec run when the checkout
# has them built (target/debug or target/release, or POSH_LSP / POSH_EXEC), and are skipped
# otherwise; Graphviz's dot, when installed, is used too.
set -euo pipefail
cd "$(dirname "$0")"

started=$SECONDS
step() { printf '\n== %s (%ds)\n' "$*" $((SECONDS - started)); }

step "npm ci"
# --ignore-scripts: the two install scripts (esbuild checking its binary, vsce-sign copying one
# for signing, which packaging does not use) are not needed, and npm 11 skips them anyway.
npm ci --no-audit --no-fund --ignore-scripts

step "type check (tsc --strict, no emit)"
npm run --silent check

step "bundle (esbuild, development)"
npm run --silent build

step "unit tests (node --test)"
npm test

step "package (vsce package: production bundle)"
rm -f ./*.vsix
vsix="posh-$(node -p 'require("./package.json").version').vsix"
# No repository link: the project has no public URL yet (the root Cargo.toml's `repository` is a
# placeholder), and vsce asks about a missing one unless told.
# The README it holds is this one less the screenshot, which lies outside the extension
# (package-readme.mjs says why).
node package-readme.mjs
npx --no-install vsce package --no-dependencies --allow-missing-repository --readme-path out/README.md --out "$vsix"

step "check the .vsix"
listing=$(mktemp)
trap 'rm -f "$listing"' EXIT
node - "$vsix" "$listing" <<'JS'
// Lists the .vsix (a zip) with yauzl, which vsce itself depends on: no unzip needed.
const [file, out] = process.argv.slice(2);
const fs = require("node:fs");
const yauzl = require("yauzl");
yauzl.open(file, { lazyEntries: true }, (err, zip) => {
  if (err) throw err;
  const names = [];
  zip.on("entry", (e) => { names.push(`${e.uncompressedSize}\t${e.fileName}`); zip.readEntry(); });
  zip.on("end", () => fs.writeFileSync(out, names.join("\n") + "\n"));
  zip.readEntry();
});
JS
cat "$listing"
files=$(wc -l < "$listing")
fail() { echo "ci.sh: $*" >&2; exit 1; }
grep -q $'\textension/dist/extension.js$' "$listing" || fail "the .vsix has no extension/dist/extension.js"
grep -q $'\textension/package.json$' "$listing" || fail "the .vsix has no package.json"
grep -q $'\textension/syntaxes/posh.tmLanguage.json$' "$listing" || fail "the .vsix has no grammar"
grep -q $'\textension/LICENSE' "$listing" || fail "the .vsix has no LICENSE"
grep -qi $'\textension/readme.md$' "$listing" || fail "the .vsix has no README"
if grep -q 'node_modules/' "$listing"; then fail "the .vsix holds node_modules"; fi
if grep -Eq $'\textension/(src|test|out)/|\\.map$|\\.ts$' "$listing"; then fail "the .vsix holds sources, tests or source maps"; fi
((files <= 20)) || fail "the .vsix holds $files files; expected at most 20 (is the bundle working?)"
printf '\n%s: %s bytes, %s files; ci.sh took %ds\n' "$vsix" "$(wc -c < "$vsix")" "$files" $((SECONDS - started))
