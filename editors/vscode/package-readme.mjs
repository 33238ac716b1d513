// Writes out/README.md, the README that goes into the .vsix (vsce --readme-path): this README
// less its screenshot. The picture lies outside the extension (docs/screenshots/, beside
// Neovim's), where the extension's page in VS Code cannot reach it, and vsce refuses a relative
// image when there is no repository URL to make it absolute (the project has none yet).
import fs from "node:fs";

const readme = fs.readFileSync("README.md", "utf8");
const shot = /^!\[[^\n]*\]\(\.\.\/\.\.\/docs\/screenshots\/[^)\n]*\)\n\n/gm;
const packaged = readme.replace(shot, "");
if (/\]\(\.\.\//.test(packaged)) {
  console.error("package-readme.mjs: README.md links outside the extension (../) other than in a picture line of its own");
  process.exit(1);
}
fs.mkdirSync("out", { recursive: true });
fs.writeFileSync("out/README.md", packaged);
