// The plan webview's HTML. No script runs in it: the Content-Security-Policy allows none, the
// picture is an <img> of a data: URL (an SVG shown as an image runs no script and loads
// nothing), and every text is escaped.

import { randomBytes } from "node:crypto";
import type { PlanOutcome } from "./plan";

export function escapeHtml(text: string): string {
  return text
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&#39;");
}

/** A fresh nonce for the page's one <style> element. */
export function makeNonce(): string {
  return randomBytes(18).toString("base64");
}

/** Nothing may load or run but images from data: URLs and the page's own nonce'd style. */
export function contentSecurityPolicy(nonce: string): string {
  return [
    "default-src 'none'",
    "img-src data:",
    `style-src 'nonce-${nonce}'`,
    "script-src 'none'",
    "frame-src 'none'",
    "form-action 'none'",
    "base-uri 'none'",
  ].join("; ");
}

export function svgDataUrl(svg: string): string {
  return `data:image/svg+xml;base64,${Buffer.from(svg, "utf8").toString("base64")}`;
}

export interface PlanPage {
  /** The script's name, for the heading. */
  readonly title: string;
  readonly outcome: PlanOutcome;
  /** Said above the plan, such as "the editor has unsaved changes". */
  readonly notes?: readonly string[];
  readonly nonce: string;
}

const STYLE = `
  body { font-family: var(--vscode-font-family, sans-serif); color: var(--vscode-foreground, #333);
         background: var(--vscode-editor-background, #fff); padding: 0 1em 1em; }
  h1 { font-size: 1.2em; font-weight: 600; }
  .note { border-left: 3px solid var(--vscode-editorInfo-foreground, #3794ff); padding: .2em .6em; margin: .5em 0; }
  .warning { border-left: 3px solid var(--vscode-editorWarning-foreground, #cca700); padding: .2em .6em; margin: .5em 0;
             white-space: pre-wrap; font-family: var(--vscode-editor-font-family, monospace); }
  .picture { overflow: auto; background: #fff; border-radius: 4px; padding: 8px; }
  .picture img { display: block; max-width: none; }
  pre { font-family: var(--vscode-editor-font-family, monospace); font-size: var(--vscode-editor-font-size, 12px);
        background: var(--vscode-textCodeBlock-background, #f4f4f4); padding: .6em; overflow: auto; }
  code { font-family: var(--vscode-editor-font-family, monospace); }
`;

function page(nonce: string, title: string, body: string): string {
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${escapeHtml(contentSecurityPolicy(nonce))}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style nonce="${escapeHtml(nonce)}">${STYLE}</style>
</head>
<body>
${body}
</body>
</html>
`;
}

function warningsBlock(warnings: string): string {
  return warnings === "" ? "" : `<div class="warning">posh-exec said:\n${escapeHtml(warnings)}</div>\n`;
}

export function planHtml(p: PlanPage): string {
  const title = `Plan: ${p.title}`;
  const parts: string[] = [`<h1>${escapeHtml(title)}</h1>`];
  for (const note of p.notes ?? []) {
    parts.push(`<p class="note">${escapeHtml(note)}</p>`);
  }
  const o = p.outcome;
  switch (o.kind) {
    case "svg":
      parts.push(warningsBlock(o.warnings));
      parts.push(
        `<div class="picture"><img alt="${escapeHtml(`The plan of ${p.title}`)}" src="${svgDataUrl(o.svg)}"></div>`,
      );
      parts.push(`<details><summary>dot source</summary><pre>${escapeHtml(o.dot)}</pre></details>`);
      break;
    case "dot":
      parts.push(warningsBlock(o.warnings));
      if (o.reason === "no-graphviz") {
        parts.push(
          `<p class="note">Graphviz is not installed (no <code>dot</code> on PATH), so here is the plan as dot text. ` +
            `Install graphviz (<code>apt install graphviz</code>, <code>dnf install graphviz</code>, ` +
            `<code>brew install graphviz</code>) and run <b>posh: Show Plan</b> again to see it as a picture.</p>`,
        );
      } else {
        parts.push(`<p class="note">${escapeHtml(o.detail)}; here is the plan as dot text.</p>`);
      }
      parts.push(`<pre>${escapeHtml(o.dot)}</pre>`);
      break;
    case "error":
      parts.push(`<p class="warning">${escapeHtml(o.message)}</p>`);
      parts.push(`<pre>${escapeHtml(o.detail)}</pre>`);
      break;
  }
  return page(p.nonce, title, parts.filter((s) => s !== "").join("\n"));
}
