#!/usr/bin/env bash
# posh-exec's overhead over bash, as ratios measured in one run (these machines are shared and
# noisy: compare within a run, never against a number from another day).
#
#   [ROUNDS=3] bench/overhead.sh [POSH_EXEC]   (default: target/release/posh-exec, built if missing)
#
# 1. A tight loop of 2,000 small pipelines: with nothing mounted (target: at most 1.05x bash),
#    and with the data on an embedded mount, where every pipeline goes through the runtime (the
#    per-pipeline overhead).
# 2. The peer suite (../shared/peer-scripts), the same two ways.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
posh=${1:-$root/target/release/posh-exec}
if [ ! -x "$posh" ]; then cargo build --release -q -p posh-exec --manifest-path "$root/Cargo.toml"; fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
mkdir -p data xdg
seq 1 200 | sed 's/^/line x /' > data/small.txt
printf '[[mount]]\npath = "data"\nproxy = "embedded"\n' > mounted.toml
cat > loop.sh <<'SH'
for i in $(seq 2000); do
  cat data/small.txt | grep x | wc -l
done > loop.out
SH
export XDG_CONFIG_HOME=$work/xdg LC_ALL=C
unset POSH_CONFIG

seconds() { # seconds COMMAND...: wall time of one run
  local start end
  start=$(date +%s%N)
  "$@" > /dev/null 2>&1
  end=$(date +%s%N)
  echo "scale=3; ($end - $start) / 1000000000" | bc
}
ratio() { echo "scale=3; $1 / $2" | bc; }
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# Interleaved rounds, medians: a burst of other work on the machine hits all three alike.
rounds=${ROUNDS:-3}
bash_runs=() posh_runs=() mounted_runs=()
same_as_bash() { cmp -s loop.out bash.out || { echo "FAIL: $1: output differs from bash's" >&2; exit 1; }; }
for _ in $(seq "$rounds"); do
  bash_runs+=("$(seconds bash loop.sh)")
  mv loop.out bash.out
  posh_runs+=("$(seconds "$posh" loop.sh)")
  same_as_bash "posh-exec, nothing mounted"
  mounted_runs+=("$(seconds "$posh" --config mounted.toml loop.sh)")
  same_as_bash "posh-exec, data mounted"
done
bash_loop=$(median "${bash_runs[@]}")
posh_loop=$(median "${posh_runs[@]}")
mounted_loop=$(median "${mounted_runs[@]}")
echo "2,000 pipelines (median of $rounds interleaved rounds): bash ${bash_loop}s; posh-exec, nothing mounted ${posh_loop}s ($(ratio "$posh_loop" "$bash_loop")x);" \
  "data mounted ${mounted_loop}s ($(ratio "$mounted_loop" "$bash_loop")x," \
  "$(echo "scale=2; ($mounted_loop - $bash_loop) * 1000 / 2000" | bc) ms per pipeline through the runtime)"

peers=$root/../shared/peer-scripts
if [ -d "$peers" ]; then
  python3 "$peers/tools/gen_inputs.py" "$work/peer-in" 1 > /dev/null
  printf '[[mount]]\npath = "%s"\nproxy = "embedded"\n' "$work/peer-in" > peer-mounted.toml
  bash_peer=$(seconds "$peers/tools/run_peer_scripts.sh" "$work/peer-in" "$work/p-bash")
  posh_peer=$(RUN_SHELL="$posh" seconds "$peers/tools/run_peer_scripts.sh" "$work/peer-in" "$work/p-posh")
  mounted_peer=$(POSH_CONFIG=$work/peer-mounted.toml RUN_SHELL="$posh" seconds "$peers/tools/run_peer_scripts.sh" "$work/peer-in" "$work/p-mounted")
  echo "peer suite: bash ${bash_peer}s; posh-exec, nothing mounted ${posh_peer}s ($(ratio "$posh_peer" "$bash_peer")x);" \
    "inputs mounted ${mounted_peer}s ($(ratio "$mounted_peer" "$bash_peer")x)"
  for run in p-posh p-mounted; do
    diff -q "$work/p-bash/summary.txt" "$work/$run/summary.txt" > /dev/null || echo "WARNING: $run output differs from bash"
  done
fi
