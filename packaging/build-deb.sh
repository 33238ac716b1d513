#!/usr/bin/env bash
# Builds posh's Debian package, target/debian/posh-exec_VERSION-1_ARCH.deb: posh-exec, posh-run,
# posh-proxy and posh-lsp in /usr/bin, the bash builtin in /usr/lib/posh, man pages, bash, zsh and
# fish completions, the posh-proxy systemd unit (installed disabled) and the documentation. What
# goes where is `[package.metadata.deb]` in posh-exec/Cargo.toml.
#
# Needs cargo-deb (`cargo install cargo-deb --locked`). `--profile PROFILE` packages another of
# cargo's profiles than release (CI packages its test build's, `dev`, to build one profile);
# other arguments are passed to `cargo deb` (for instance `--deb-revision 2`). Prints the
# package's path last.
set -euo pipefail
cd "$(dirname "$0")/.."

profile=release
if [[ ${1:-} == --profile ]]; then
  profile=${2:?build-deb.sh: --profile needs a profile}
  shift 2
fi

if ! command -v cargo-deb >/dev/null; then
  echo "build-deb.sh: cargo-deb is not installed (cargo install cargo-deb --locked)" >&2
  exit 2
fi

# The binaries, posh-exec's, posh-proxy's and posh-lsp's apart as `cargo install --path` builds them (features
# are then unified within each package only), so that what `cargo install --target-dir target`
# built is reused. Naming posh-handoff puts the builtin's shared object beside the binaries.
cargo build --profile "$profile" --locked -p posh-exec -p posh-handoff
cargo build --profile "$profile" --locked -p posh-proxy
cargo build --profile "$profile" --locked -p posh-lsp
target_dir=$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
case $profile in
  dev) bin="$target_dir/debug" ;;
  *) bin="$target_dir/$profile" ;;
esac

# What cargo-deb packages besides the binaries, generated from them (the paths are the assets';
# not under target/, where cargo-deb expects only what cargo builds).
assets=packaging/generated
rm -rf "$assets"
mkdir -p "$assets/man" "$assets/completions/bash" "$assets/completions/zsh" "$assets/completions/fish" \
  "$assets/systemd"
for program in posh-exec posh-proxy posh-lsp; do
  "$bin/$program" --generate-man "$assets/man"
  "$bin/$program" --generate-completions bash >"$assets/completions/bash/$program"
  "$bin/$program" --generate-completions zsh >"$assets/completions/zsh/_$program"
  "$bin/$program" --generate-completions fish >"$assets/completions/fish/$program.fish"
done

# The unit as shipped in the source (see SECURITY.md), with the package's paths, and a header
# that says how to turn it on.
unit="$assets/systemd/posh-proxy.service"
{
  cat <<'EOF'
# posh-proxy as a systemd service, with least privilege (/usr/share/doc/posh-exec/SECURITY.md).
# The posh-exec package installed it disabled and made the system user posh-proxy. To serve an
# export DIR: `systemctl edit posh-proxy`, and in the drop-in, under [Service], clear and set
#   ExecStart=
#   ExecStart=/usr/bin/posh-proxy --export DIR --listen ADDR --state-dir /var/lib/posh-proxy
#   ReadWritePaths=
#   ReadWritePaths=DIR
# give the user posh-proxy access to DIR; list the clients' fingerprints (`posh-exec
# --print-identity`) in /var/lib/posh-proxy/authorized-clients; `systemctl enable --now posh-proxy`.
EOF
  sed -e '1,/^\[Unit\]$/{/^\[Unit\]$/!d}' \
    -e 's|/usr/local/bin/posh-proxy|/usr/bin/posh-proxy|' \
    -e 's|^Documentation=.*|Documentation=man:posh-proxy(8) file:///usr/share/doc/posh-exec/SECURITY.md|' \
    packaging/systemd/posh-proxy.service
} >"$unit"
if grep -q /usr/local "$unit" || ! grep -q '^ExecStart=/usr/bin/posh-proxy ' "$unit"; then
  echo "build-deb.sh: packaging/systemd/posh-proxy.service changed: adapt its rewriting here" >&2
  exit 1
fi

cargo deb -p posh-exec --no-build --profile "$profile" "$@"
