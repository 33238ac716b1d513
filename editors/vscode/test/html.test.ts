import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { contentSecurityPolicy, escapeHtml, makeNonce, planHtml, svgDataUrl } from "../src/html";
import type { PlanOutcome } from "../src/plan";

const HOSTILE = `</pre><script>alert("x")</script><img src=x onerror='y'>&amp;`;

function csp(html: string): string {
  const metas = [...html.matchAll(/<meta http-equiv="Content-Security-Policy" content="([^"]*)">/g)];
  assert.equal(metas.length, 1, "exactly one CSP meta element");
  return (metas[0]?.[1] ?? "").replace(/&#39;/g, "'");
}

/** The page's markup outside the embedded data: URL and escaped text. */
function tags(html: string): string[] {
  return [...html.matchAll(/<([a-zA-Z][a-zA-Z0-9]*)\b/g)].map((m) => (m[1] ?? "").toLowerCase());
}

describe("escapeHtml", () => {
  it("escapes the five characters that matter in text and attributes", () => {
    assert.equal(escapeHtml(`<a href="x">'&'</a>`), "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
    assert.equal(escapeHtml("plain → text"), "plain → text");
  });
});

describe("the plan page", () => {
  const nonce = makeNonce();

  it("allows no script, nothing remote, and only its own nonce'd style", () => {
    const policy = contentSecurityPolicy(nonce);
    assert.match(policy, /default-src 'none'/);
    assert.match(policy, /script-src 'none'/);
    assert.match(policy, /img-src data:(;|$)/);
    assert.ok(policy.includes(`style-src 'nonce-${nonce}'`));
    assert.doesNotMatch(policy, /unsafe-inline|unsafe-eval|https?:|\*/);
  });

  it("makes a new nonce each time, in base64", () => {
    const a = makeNonce();
    assert.notEqual(a, makeNonce());
    assert.match(a, /^[A-Za-z0-9+/]{24}$/);
  });

  it("shows the SVG as an image of a data: URL, never inline", () => {
    const svg = `<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script><text>a&lt;b</text></svg>`;
    const outcome: PlanOutcome = { kind: "svg", svg, dot: `digraph posh { a [label="${HOSTILE}"] }`, warnings: "" };
    const html = planHtml({ title: "run.sh", outcome, nonce });
    assert.ok(csp(html).includes(`'nonce-${nonce}'`));
    assert.ok(html.includes(`<img alt="The plan of run.sh" src="${svgDataUrl(svg)}">`));
    const b64 = /src="data:image\/svg\+xml;base64,([A-Za-z0-9+/=]+)"/.exec(html)?.[1] ?? "";
    assert.equal(Buffer.from(b64, "base64").toString("utf8"), svg);
    assert.ok(!html.includes("<svg"), "the SVG is not part of the page");
    assert.deepEqual(
      [...new Set(tags(html))].sort(),
      ["body", "details", "div", "h1", "head", "html", "img", "meta", "pre", "style", "summary", "title"],
    );
    assert.ok(!/<script/i.test(html));
    assert.ok(html.includes(escapeHtml(HOSTILE)));
  });

  it("shows the dot text escaped and says to install graphviz when dot is missing", () => {
    const dot = `digraph posh {\n  p0n0 [label="grep '<x>' & \\"y\\""];\n}\n`;
    const outcome: PlanOutcome = { kind: "dot", dot, warnings: "", reason: "no-graphviz", detail: "" };
    const html = planHtml({ title: "a.sh", outcome, nonce });
    csp(html);
    assert.match(html, /Install graphviz/);
    assert.match(html, /apt install graphviz/);
    const pre = /<pre>([\s\S]*?)<\/pre>/.exec(html)?.[1] ?? "";
    assert.equal(pre, escapeHtml(dot));
    assert.ok(pre.includes("&lt;x&gt;") && pre.includes("&amp;") && pre.includes("&quot;"));
    assert.ok(!html.includes("<img"));
  });

  it("says why dot failed, and escapes posh-exec's warnings, the notes and the title", () => {
    const outcome: PlanOutcome = {
      kind: "dot",
      dot: "digraph {}",
      warnings: `s.sh:3:1: syntax error: ${HOSTILE}`,
      reason: "dot-failed",
      detail: `dot -Tsvg failed: ${HOSTILE}`,
    };
    const html = planHtml({ title: HOSTILE, outcome, nonce, notes: [HOSTILE] });
    csp(html);
    assert.ok(!html.includes(HOSTILE));
    assert.ok(!/<script/i.test(html));
    assert.ok(!/onerror=/.test(html.replace(/onerror=&#39;/g, "")));
    assert.ok(html.includes("posh-exec said:"));
    assert.ok(html.includes("dot -Tsvg failed:"));
    assert.ok(!html.includes("Install graphviz"));
  });

  it("shows an error with its detail", () => {
    const outcome: PlanOutcome = { kind: "error", message: "posh-exec --explain printed no plan: boom", detail: "stderr <here>" };
    const html = planHtml({ title: "x.sh", outcome, nonce });
    csp(html);
    assert.ok(html.includes("printed no plan: boom"));
    assert.ok(html.includes("stderr &lt;here&gt;"));
  });

  it("gives the nonce to its one style element", () => {
    const html = planHtml({ title: "x", outcome: { kind: "error", message: "m", detail: "d" }, nonce });
    assert.equal([...html.matchAll(/<style\b/g)].length, 1);
    assert.ok(html.includes(`<style nonce="${nonce}">`));
    assert.ok(!/\sstyle="/.test(html), "no inline style attributes: the CSP would block them");
  });
});
