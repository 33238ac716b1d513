#!/usr/bin/env bash
# Checks the Emacs package in editors/emacs: byte-compilation with warnings as errors, checkdoc,
# package-lint, and the ERT tests, which drive the real posh-lsp ($POSH_LSP, default
# ../../target/debug/posh-lsp relative to this directory; build it with `cargo build -p posh-lsp`).
#
# Needs Debian's emacs-nox, elpa-eglot and elpa-package-lint (apt-get install emacs-nox elpa-eglot
# elpa-package-lint), and truncate (coreutils). Every step runs in `emacs -Q`, with only the
# system's elpa packages ($POSH_EMACS_ELPA, default /usr/share/emacs/site-lisp/elpa) activated.
# Without package-lint installed the step fails, unless POSH_EMACS_SKIP_PACKAGE_LINT=1 says to
# skip it (and it says so).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
POSH_LSP="${POSH_LSP:-../../target/debug/posh-lsp}"
POSH_LSP="$(realpath -m "$POSH_LSP")"
export POSH_LSP
elpa="${POSH_EMACS_ELPA:-/usr/share/emacs/site-lisp/elpa}"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"; rm -f "$here/posh.elc"' EXIT

# The system's packages (eglot, package-lint), and none of the user's.
activate="(progn (require 'package)
  (setq package-directory-list (list \"$elpa\") package-user-dir \"$scratch/elpa\")
  (package-initialize))"
run_emacs() { HOME="$scratch" emacs -Q --batch --eval "$activate" -L . "$@"; }

started=$SECONDS
echo "emacs: $(emacs --version | head -1); eglot: $(ls -d "$elpa"/eglot-* 2>/dev/null | xargs -n1 basename || echo missing)"

echo "== byte-compile (warnings are errors)"
run_emacs --eval '(setq byte-compile-error-on-warn t)' -f batch-byte-compile posh.el
rm -f posh.elc

echo "== checkdoc"
run_emacs -l test/checkdoc-batch.el posh.el

echo "== package-lint"
if compgen -G "$elpa/package-lint-*" > /dev/null; then
    run_emacs -l test/package-lint-batch.el posh.el
elif [[ "${POSH_EMACS_SKIP_PACKAGE_LINT:-}" == 1 ]]; then
    echo "SKIPPED: package-lint is not installed (apt-get install elpa-package-lint)"
else
    echo "package-lint is not installed: apt-get install elpa-package-lint, or POSH_EMACS_SKIP_PACKAGE_LINT=1" >&2
    exit 1
fi

echo "== ERT (posh-lsp: $POSH_LSP)"
[[ -x "$POSH_LSP" ]] || { echo "no posh-lsp at $POSH_LSP: cargo build -p posh-lsp" >&2; exit 1; }
run_emacs -l test/posh-test.el -f ert-run-tests-batch-and-exit 2>&1 | tee "$scratch/ert.log"
# ERT's summary, e.g. "Ran 14 tests, 14 results as expected, 0 unexpected", as a plain count.
summary="$(grep -E '^Ran [0-9]+ tests?, [0-9]+ results? as expected' "$scratch/ert.log" | tail -1)"
expected="$(sed -E 's/^Ran [0-9]+ tests?, ([0-9]+) results? as expected.*/\1/' <<< "$summary")"
unexpected="$(sed -nE 's/.*, ([0-9]+) unexpected.*/\1/p' <<< "$summary")"
skipped="$(sed -nE 's/.*, ([0-9]+) skipped.*/\1/p' <<< "$summary")"
echo "emacs checks passed in $((SECONDS - started)) s"
echo "emacs: ${expected:-0} passed, ${unexpected:-0} failed${skipped:+, $skipped skipped}"
