// Drives Debian's headless Chromium through the DevTools protocol (puppeteer-core) against a
// running code-server: loads the workbench, opens a file from the explorer as a person would, waits
// for posh-lsp's inlay hints and code lenses to be drawn, and writes what the editor shows as
// text (OUT/vscode.txt) and as a picture (OUT/vscode.png). Exits 1, saying what is missing, when
// there are no hints or no lenses after the wait; every wait is bounded. Run by browser.sh.
//
//   node drive.mjs --url URL --chromium PATH --profile DIR --pid-file FILE --file NAME --out DIR
//     [--expect-hint REGEX]... [--expect-lens REGEX]...
// Each --expect-hint must match one of the hints (as "LINE: TEXT"), each --expect-lens one of
// the lenses; with none given, any hint and any lens will do.
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";

const args = { "expect-hint": [], "expect-lens": [] };
for (let i = 2; i < process.argv.length; i += 2) {
  const k = process.argv[i].replace(/^--/, "");
  if (Array.isArray(args[k])) args[k].push(process.argv[i + 1]);
  else args[k] = process.argv[i + 1];
}
for (const k of ["url", "chromium", "profile", "pid-file", "file", "out"]) {
  if (!args[k]) throw new Error(`drive.mjs: --${k} is required`);
}
// puppeteer-core is installed by browser.sh in target/vscode-browser, not beside this file.
const require = createRequire(path.join(process.env.POSH_BROWSER_MODULES ?? "", "x.js"));
const puppeteer = require("puppeteer-core");

const WIDTH = 1200;
const HEIGHT = 300;
const log = (m) => console.log(`drive.mjs: ${m}`);
const fail = (m) => {
  console.error(`drive.mjs: FAILED: ${m}`);
  process.exitCode = 1;
};

// What the editor shows, read from the DOM: the visible lines in order (their text with the
// inlay hints, which VS Code draws as injected text inside the line), the inlay hints alone, and
// the code lenses (the .codelens-decoration widgets) with the line they stand above.
function readEditor() {
  // VS Code draws spaces as no-break spaces, and pads a hint with a hair space.
  const clean = (s) => s.replace(/[\u00a0\u200a]/g, " ").replace(/\s+$/, "");
  const editor = document.querySelector(".editor-group-container.active .monaco-editor");
  if (!editor) return null;
  const top = (el) => parseFloat(el.style.top || "0");
  const lines = [...editor.querySelectorAll(".view-lines .view-line")].sort((a, b) => top(a) - top(b));
  const numbers = [...editor.querySelectorAll(".margin-view-overlays .line-numbers")]
    .map((el) => ({ top: top(el.parentElement), n: el.textContent.trim() }));
  const lineAt = (t) => {
    let best = null;
    for (const n of numbers) if (Math.abs(n.top - t) < 2) best = n.n;
    return best;
  };
  const hints = [];
  const rows = lines.map((el) => {
    const n = lineAt(top(el));
    // Inlay hints are drawn as injected text inside the line: spans whose classes come from
    // VS Code's dynamic CSS rules (dyn-rule-*), holding text that is not in the document. A hint
    // of several label parts is several such spans in a row, its padding one more.
    let current = null;
    for (const span of el.querySelectorAll(":scope > span > span")) {
      if (/\bdyn-rule-/.test(span.className)) {
        current = (current ?? "") + span.textContent;
      } else if (current !== null) {
        if (clean(current).trim()) hints.push(`${n}: ${clean(current).trim()}`);
        current = null;
      }
    }
    if (current !== null && clean(current).trim()) hints.push(`${n}: ${clean(current).trim()}`);
    return clean(`${n ?? "?"}\t${el.textContent}`);
  });
  const lenses = [...editor.querySelectorAll(".codelens-decoration")]
    .sort((a, b) => top(a.parentElement) - top(b.parentElement))
    .map((el) => clean(el.textContent).trim())
    .filter((t) => t);
  return { rows, hints, lenses, html: editor.querySelector(".view-lines")?.outerHTML ?? "" };
}

const browser = await puppeteer.launch({
  executablePath: args.chromium,
  headless: true,
  userDataDir: args.profile,
  defaultViewport: { width: WIDTH, height: HEIGHT, deviceScaleFactor: 1 },
  // Root needs --no-sandbox; the rest keeps Chromium from reaching out or asking for anything.
  args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--password-store=basic", "--use-mock-keychain", "--hide-scrollbars", "--font-render-hinting=none"],
  timeout: 30_000,
  protocolTimeout: 60_000,
});
fs.writeFileSync(args["pid-file"], String(browser.process().pid));
try {
  const page = (await browser.pages())[0] ?? (await browser.newPage());
  page.setDefaultTimeout(60_000);
  const consoleErrors = [];
  page.on("console", (m) => { if (m.type() === "error") consoleErrors.push(m.text()); });
  log(`loading ${args.url}`);
  await page.goto(args.url, { waitUntil: "domcontentloaded" });
  await page.waitForSelector(".monaco-workbench", { timeout: 60_000 });
  // The explorer lists the workspace once the remote file system answers; the file is opened by
  // a click on its row, as a person would. (Quick Open would need code-server's ripgrep, a
  // binary its install script downloads from outside the npm registry: not installed here.)
  log(`opening ${args.file} from the explorer`);
  let opened = false;
  for (let attempt = 0; attempt < 5 && !opened; attempt++) {
    const row = await page.waitForFunction((name) => [...document.querySelectorAll(".explorer-folders-view .monaco-list-row")]
      .find((r) => r.querySelector(".label-name")?.textContent.trim() === name), { timeout: 30_000 }, args.file).catch(() => null);
    if (!row) continue;
    await row.asElement().click();
    opened = await page.waitForFunction((name) => [...document.querySelectorAll(".tabs-container .tab")]
      .some((t) => t.querySelector(".label-name")?.textContent.trim() === name), { timeout: 10_000 }, args.file)
      .then(() => true, () => false);
  }
  if (!opened) throw new Error(`could not open ${args.file} from the explorer`);
  // The side bar closed (Ctrl+B), so that the whole pipeline and its hints fit in the picture.
  await page.keyboard.down("Control");
  await page.keyboard.press("b");
  await page.keyboard.up("Control");
  await page.waitForFunction(() => !document.querySelector(".part.sidebar")?.checkVisibility(), { timeout: 10_000 })
    .catch(() => log("the side bar did not close"));
  await page.mouse.move(WIDTH - 5, HEIGHT - 5);

  // Bounded wait: hints and lenses both drawn, then the editor's text holding still.
  const deadline = Date.now() + 90_000;
  let seen = null;
  while (Date.now() < deadline) {
    seen = await page.evaluate(readEditor);
    if (seen && seen.hints.length > 0 && seen.lenses.length > 0) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  if (seen && seen.hints.length > 0 && seen.lenses.length > 0) {
    let previous = "";
    for (let i = 0; i < 20; i++) {
      await new Promise((r) => setTimeout(r, 300));
      seen = await page.evaluate(readEditor);
      const now = JSON.stringify([seen.rows, seen.lenses]);
      if (now === previous) break;
      previous = now;
    }
  }
  const text = [
    ...(seen?.lenses ?? []).map((l) => `lens\t${l}`),
    ...(seen?.hints ?? []).map((h) => `hint\t${h}`),
    ...(seen?.rows ?? []).map((r) => `line\t${r}`),
  ].join("\n") + "\n";
  fs.writeFileSync(path.join(args.out, "vscode.txt"), text);
  await page.screenshot({ path: path.join(args.out, "vscode.png"), type: "png" });
  if (process.env.POSH_BROWSER_DEBUG) fs.writeFileSync(path.join(args.out, "view-lines.html"), seen?.html ?? "");
  process.stdout.write(text);
  if (!seen) fail("no editor on the page");
  else {
    if (seen.hints.length === 0) fail(`no inlay hints drawn in ${args.file} after 90 s`);
    if (seen.lenses.length === 0) fail(`no code lenses drawn above ${args.file} after 90 s`);
    for (const [kind, list, patterns] of [["hint", seen.hints, args["expect-hint"]], ["lens", seen.lenses, args["expect-lens"]]]) {
      const plural = kind === "hint" ? "hints" : "lenses";
      for (const p of patterns) {
        if (!list.some((t) => new RegExp(p).test(t))) fail(`no ${kind} matches /${p}/ (the ${plural}: ${JSON.stringify(list)})`);
      }
    }
  }
  if (process.exitCode && consoleErrors.length) {
    console.error("drive.mjs: the page's console errors:");
    for (const e of consoleErrors.slice(-15)) console.error(`  ${e}`);
  }
} catch (e) {
  fail(e?.stack ?? String(e));
  // What the page showed, for the failure's report (browser.sh keeps it).
  const page = (await browser.pages().catch(() => []))[0];
  await page?.screenshot({ path: path.join(args.out, "vscode.png"), type: "png" }).catch(() => {});
} finally {
  await browser.close().catch(() => {});
}
