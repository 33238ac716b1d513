// Bundles the extension (src/extension.ts → dist/extension.js, `vscode` left external) and the
// unit tests (test/*.test.ts → out/test/*.test.js, for `node --test`).
//
//   node esbuild.mjs               development bundle, with a source map
//   node esbuild.mjs --production  minified, no source map (what `vsce package` ships)
//   node esbuild.mjs --watch       development bundle, rebuilt on change
//   node esbuild.mjs --tests       the tests; `vscode` and `vscode-languageclient/node` are the
//                                  fakes under test/fakes, so the glue runs without VS Code
import * as esbuild from "esbuild";
import { readdirSync, rmSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.dirname(fileURLToPath(import.meta.url));
const args = new Set(process.argv.slice(2));
const production = args.has("--production");

// VS Code 1.82 runs extensions on Node 18.
const common = {
  bundle: true,
  platform: "node",
  format: "cjs",
  target: "node18",
  logLevel: "warning",
  absWorkingDir: root,
};

/** Resolves `vscode` and `vscode-languageclient/node` to the fakes of test/fakes. */
const fakes = {
  name: "fakes",
  setup(build) {
    build.onResolve({ filter: /^vscode$/ }, () => ({ path: path.join(root, "test/fakes/vscode.ts") }));
    build.onResolve({ filter: /^vscode-languageclient\/node$/ }, () => ({
      path: path.join(root, "test/fakes/languageclient.ts"),
    }));
  },
};

if (args.has("--tests")) {
  rmSync(path.join(root, "out"), { recursive: true, force: true });
  const entryPoints = readdirSync(path.join(root, "test"))
    .filter((f) => f.endsWith(".test.ts"))
    .map((f) => path.join("test", f));
  await esbuild.build({
    ...common,
    entryPoints,
    outdir: "out/test",
    sourcemap: "inline",
    plugins: [fakes],
  });
} else {
  const options = {
    ...common,
    entryPoints: ["src/extension.ts"],
    outfile: "dist/extension.js",
    external: ["vscode"],
    minify: production,
    sourcemap: !production,
    sourcesContent: false,
    metafile: true,
  };
  rmSync(path.join(root, "dist"), { recursive: true, force: true });
  if (args.has("--watch")) {
    const ctx = await esbuild.context(options);
    await ctx.watch();
    console.log("watching src/ for changes");
  } else {
    const result = await esbuild.build(options);
    const bytes = result.metafile.outputs["dist/extension.js"].bytes;
    console.log(`dist/extension.js: ${bytes} bytes${production ? " (production)" : ""}`);
  }
}
