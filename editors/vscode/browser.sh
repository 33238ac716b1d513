#!/usr/bin/env bash
# The extension in a real VS Code, seen by a browser: code-server (the VS Code build on the npm
# registry) with the packaged .vsix installed and posh-lsp from the test build, loaded by Debian's
# headless Chromium through the DevTools protocol (puppeteer-core, browser/drive.mjs). It opens
# the repository's example (examples/top-words.sh, in a copy of examples/ as the workspace: its
# posh.toml mounts data/), waits for the inlay hints and code lenses that posh-lsp sends, and
# fails unless they are drawn on the page.
#
#   editors/vscode/browser.sh                # the test: fails (exit 1) when hints or lenses are missing
#   editors/vscode/browser.sh --check        # the test, and fails when the editor's text (lines with
#                                            # their hints, lenses) differs from docs/screenshots/vscode.txt
#   editors/vscode/browser.sh --screenshot   # the test, and rewrites docs/screenshots/vscode.{txt,png}
#   editors/vscode/browser.sh --out DIR      # the test, writing DIR/vscode.{txt,png}
#
# --check compares text, not pixels: the PNG depends on the fonts and the Chromium build of the
# machine that drew it, the text only on VS Code, the extension and posh-lsp.
#
# Needs the .vsix (editors/vscode/ci.sh makes it), node 20 and npm, and posh-lsp ($POSH_LSP,
# default target/debug/posh-lsp, built when missing). Installs Debian's chromium with apt-get when
# it is missing (as root), and code-server and puppeteer-core (browser/package-lock.json) into
# target/vscode-browser, kept there for the next run. Everything runs with a home, XDG
# directories, a code-server user-data directory and an extensions directory of its own, made
# afresh; code-server, Chromium and posh-lsp are ended on every way out.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
started=$SECONDS
say() { printf 'browser.sh: %s (%ds)\n' "$*" $((SECONDS - started)); }
fail() { printf 'browser.sh: FAILED: %s\n' "$*" >&2; exit 1; }

mode=test
out=
case ${1:-} in
  "") ;;
  --check) mode=check ;;
  --screenshot) mode=write; out=$repo/docs/screenshots ;;
  --out) mode=write; out=${2:?--out needs a directory} ;;
  *) echo "usage: $0 [--check | --screenshot | --out DIR]" >&2; exit 2 ;;
esac

vsix=$here/posh-$(node -p 'require(process.argv[1]).version' "$here/package.json").vsix
[[ -f $vsix ]] || fail "no $vsix: make it with editors/vscode/ci.sh"

posh_lsp=${POSH_LSP:-$repo/target/debug/posh-lsp}
if [[ -z ${POSH_LSP:-} && ! -x $posh_lsp ]]; then
  (cd "$repo" && cargo build --workspace)
fi
[[ -x $posh_lsp ]] || fail "no posh-lsp at $posh_lsp"
posh_lsp=$(cd "$(dirname "$posh_lsp")" && pwd)/$(basename "$posh_lsp")

# Chromium, from Debian. The wrapper /usr/bin/chromium only adds flags from /etc/chromium.d; the
# binary behind it is launched directly.
chromium=${POSH_CHROMIUM:-/usr/lib/chromium/chromium}
if [[ ! -x $chromium ]]; then
  say "installing Debian's chromium"
  ((EUID == 0)) || fail "needs Debian's chromium (apt-get install chromium)"
  timeout 600 apt-get install -y --no-install-recommends chromium >/dev/null ||
    { timeout 300 apt-get update >/dev/null && timeout 600 apt-get install -y --no-install-recommends chromium >/dev/null; } ||
    fail "apt-get install chromium failed"
fi
[[ -x $chromium ]] || fail "no chromium at $chromium"

# code-server and puppeteer-core, from the lock file, into target/vscode-browser; a stamp names
# the lock file's hash, so that a changed lock installs afresh. code-server's own install script
# would fetch a ripgrep binary from outside the registry, so the scripts are skipped and its
# steps done here: VS Code's locked dependencies installed, its asar link made, and argon2 (which
# code-server loads at start) built with node-gyp against the local node's headers. VS Code's
# other native modules stay unbuilt: spdlog (log files) and native-watchdog (the extension
# host's) log an error and are done without; node-pty (the terminal) and ripgrep (search, Quick
# Open: the file is opened from the explorer) are not used. That saves a minute of compiling.
cache=$repo/target/vscode-browser
lock_hash=$(sha256sum "$here/browser/package-lock.json" | cut -c1-16)
if [[ ! -f $cache/stamp-$lock_hash ]]; then
  say "installing code-server and puppeteer-core into $cache"
  rm -rf "$cache"
  mkdir -p "$cache"
  cp "$here/browser/package.json" "$here/browser/package-lock.json" "$cache/"
  nodedir=$(dirname "$(dirname "$(command -v node)")")
  [[ -f $nodedir/include/node/node.h ]] || nodedir=/usr
  [[ -f $nodedir/include/node/node.h ]] || fail "no node headers (include/node/node.h) beside $(command -v node)"
  export npm_config_nodedir=$nodedir
  (cd "$cache" && timeout 600 npm ci --ignore-scripts --no-audit --no-fund) >"$cache/install.log" 2>&1 ||
    { tail -20 "$cache/install.log" >&2; fail "npm ci failed (log: $cache/install.log)"; }
  cs=$cache/node_modules/code-server
  (cd "$cs/lib/vscode" && timeout 600 npm install --omit=dev --ignore-scripts --no-audit --no-fund) >>"$cache/install.log" 2>&1 ||
    { tail -20 "$cache/install.log" >&2; fail "code-server's VS Code dependencies failed (log: $cache/install.log)"; }
  (cd "$cache" && timeout 600 npm rebuild argon2) >>"$cache/install.log" 2>&1 &&
    node -e 'require(process.argv[1])' "$cache/node_modules/argon2" ||
    { tail -20 "$cache/install.log" >&2; fail "building argon2 failed (log: $cache/install.log)"; }
  ln -sfn node_modules "$cs/lib/vscode/node_modules.asar"
  touch "$cache/stamp-$lock_hash"
fi
cs=$cache/node_modules/code-server
say "$(node -p 'require(process.argv[1]).version' "$cs/package.json" | sed 's/^/code-server /'), $("$chromium" --version 2>/dev/null)"

work=$(mktemp -d)
server_pid=
drive_pid=
cleanup() {
  local status=$?
  # code-server runs in a process group of its own (setsid): its server, extension host and
  # posh-lsp end with it. Chromium's group is the one whose leader drive.mjs wrote down.
  local group groups=("$drive_pid" "$server_pid" "$(cat "$work/chromium.pid" 2>/dev/null)")
  for group in "${groups[@]}"; do
    [[ -n $group ]] || continue
    kill -TERM -- "-$group" 2>/dev/null || true
  done
  for group in "${groups[@]}"; do
    [[ -n $group ]] || continue
    for _ in $(seq 50); do kill -0 -- "-$group" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$group" 2>/dev/null || true
  done
  if ((status != 0)) && [[ -f $work/code-server.log ]]; then
    echo "browser.sh: code-server's log:" >&2
    tail -30 "$work/code-server.log" >&2
    # What the browser saw, kept for a look: the text and the screenshot drive.mjs wrote.
    if [[ -d ${out:-} ]]; then
      rm -rf "$cache/last-failure" && mkdir -p "$cache/last-failure"
      cp -r "$out/." "$work/code-server.log" "$cache/last-failure/" 2>/dev/null || true
      echo "browser.sh: what the browser saw is in $cache/last-failure" >&2
    fi
  fi
  rm -rf "$work"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
[[ $mode == check || $mode == test ]] && out=$work/out
mkdir -p "$out"

# The workspace: the example as it is, run from its own directory (paths relative to it).
ws=$work/example
mkdir -p "$ws/data"
cp "$repo/examples/posh.toml" "$repo/examples/my-tools.posh" "$ws/"
cp "$repo/examples/data/corpus.txt" "$ws/data/"
sed 's#examples/data/#data/#g' "$repo/examples/top-words.sh" >"$ws/top-words.sh"

# A home, XDG directories, and code-server's user data and extensions, all new. The settings keep
# VS Code's own welcome, tips, trust prompt and update checks out of the picture, and point the
# extension at the test build's posh-lsp.
home=$work/home
userdata=$work/user-data
extensions=$work/extensions
mkdir -p "$home/.config" "$home/.local/state" "$home/.local/share" "$home/.cache" "$userdata/User" "$extensions"
node - "$userdata/User/settings.json" "$posh_lsp" <<'JS'
const [file, lsp] = process.argv.slice(2);
require("node:fs").writeFileSync(file, JSON.stringify({
  "posh.server.path": lsp,
  "security.workspace.trust.enabled": false,
  "workbench.startupEditor": "none",
  "workbench.tips.enabled": false,
  "workbench.enableExperiments": false,
  "workbench.colorTheme": "Default Dark Modern",
  "workbench.secondarySideBar.defaultVisibility": "hidden",
  "chat.commandCenter.enabled": false,
  "extensions.ignoreRecommendations": true,
  "extensions.autoCheckUpdates": false,
  "extensions.autoUpdate": false,
  "update.mode": "none",
  "telemetry.telemetryLevel": "off",
  "editor.minimap.enabled": false,
  "editor.inlayHints.enabled": "on",
  "editor.codeLens": true,
  "editor.fontFamily": "'DejaVu Sans Mono', monospace",
  "editor.fontSize": 14,
  "files.autoSave": "off",
  "git.enabled": false,
  "window.restoreWindows": "none",
}, null, 2));
JS
# The environment of everything started from here: nothing from the caller's but PATH.
isolated=(env -i PATH="$PATH" HOME="$home" LANG=C.UTF-8 LC_ALL=C.UTF-8 TZ=UTC
  XDG_CONFIG_HOME="$home/.config" XDG_STATE_HOME="$home/.local/state"
  XDG_DATA_HOME="$home/.local/share" XDG_CACHE_HOME="$home/.cache" XDG_RUNTIME_DIR="$work")
code_server=(node "$cs/out/node/entry.js" --user-data-dir "$userdata" --extensions-dir "$extensions"
  --disable-telemetry --disable-update-check --disable-workspace-trust --disable-getting-started-override)

say "installing $(basename "$vsix")"
"${isolated[@]}" timeout 120 "${code_server[@]}" --install-extension "$vsix" >"$work/install.log" 2>&1 ||
  { cat "$work/install.log" >&2; fail "code-server --install-extension failed"; }
grep -q "posh.posh" <("${isolated[@]}" timeout 60 "${code_server[@]}" --list-extensions 2>/dev/null) ||
  { cat "$work/install.log" >&2; fail "the extension is not listed after installing it"; }

port=$(node -e 'const s = require("node:net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')
say "starting code-server on 127.0.0.1:$port"
# setsid (a simple command, so $! is the process that becomes its group's leader): the group
# holds code-server, its VS Code server, the extension host and posh-lsp, and is ended whole.
setsid "${isolated[@]}" "${code_server[@]}" --auth none --bind-addr "127.0.0.1:$port" --ignore-last-opened "$ws" \
  >"$work/code-server.log" 2>&1 </dev/null &
server_pid=$!
for _ in $(seq 300); do
  grep -q "HTTP server listening" "$work/code-server.log" && break
  kill -0 "$server_pid" 2>/dev/null || fail "code-server ended at start"
  sleep 0.1
done
grep -q "HTTP server listening" "$work/code-server.log" || fail "code-server not listening after 30 s"

say "driving Chromium"
status=0
"${isolated[@]}" POSH_BROWSER_MODULES="$cache/node_modules" POSH_BROWSER_DEBUG="${POSH_BROWSER_DEBUG:-}" \
  timeout -k 5 240 node "$here/browser/drive.mjs" --url "http://127.0.0.1:$port/?folder=$ws" \
  --chromium "$chromium" --profile "$work/chromium" --pid-file "$work/chromium.pid" \
  --file top-words.sh --out "$out" \
  --expect-hint '^5: on data$' --expect-hint '^5: moves [0-9.]+ [KMGT]?B$' \
  --expect-lens '^posh: 1 of 2 pipelines go to the runtime' --expect-lens '^bash moves [0-9.]+ [KMGT]?B, posh moves [0-9.]+ [KMGT]?B$' \
  &
# In the background and waited for, so that a signal to this script runs the cleanup at once
# rather than after drive.mjs; timeout leads a process group of its own, ended there too.
drive_pid=$!
wait "$drive_pid" || status=$?
drive_pid=
((status == 0)) || fail "drive.mjs exited $status (a timeout exits 124)"

case $mode in
  check)
    if ! diff -u "$repo/docs/screenshots/vscode.txt" "$out/vscode.txt"; then
      fail "docs/screenshots/vscode.txt is not what VS Code shows now; regenerate it with editors/vscode/browser.sh --screenshot"
    fi
    say "docs/screenshots/vscode.txt is what VS Code shows"
    ;;
  write) say "wrote $out/vscode.txt and $out/vscode.png" ;;
  test) say "passed" ;;
esac
