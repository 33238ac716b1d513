#!/usr/bin/env bash
# Issue 40's two costs on the emulated link (../shared/rig), against bash over the sshfs mount:
#
#   cold   `cat big/big.log | grep 'ERROR upstream' | wc -l` (200 MB) on a fresh mount (remounted
#          before each run: a user's first run after the mount's caches lapsed) and warm;
#   calls  `for f in small/*.txt; do n=$(grep -c TODO "$f"); echo "$f $n"; done` (1,000 small
#          files): a handed-over call per file.
#
# Interleaved rounds, medians; every output compared with bash's at the storage.
#
#   [ROUNDS=5] [LINK=wan|dc] [POSH_BIN=DIR] [OTHER_BIN=DIR] bench/cold-calls.sh
#
# POSH_BIN: the directory of posh-exec and posh-proxy (default target/release, built if
# missing); OTHER_BIN: a second build measured in the same rounds (before/after), with its own
# proxy. Needs root (the rig) and sshfs.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rig=$root/../shared/rig/netrig.sh
rounds=${ROUNDS:-5} link=${LINK:-wan}
case $link in
  wan) rtt=20 rate=600 ;;
  dc) rtt=0.5 rate=5000 ;;
  *) echo "LINK must be wan or dc" >&2; exit 2 ;;
esac
bin=${POSH_BIN:-$root/target/release}
if [ -z "${POSH_BIN:-}" ] && [ ! -x "$bin/posh-exec" ]; then
  cargo build --release -q -p posh-exec -p posh-proxy --manifest-path "$root/Cargo.toml"
fi
builds=("$bin")
[ -z "${OTHER_BIN:-}" ] || builds+=("$OTHER_BIN")

work=$(mktemp -d)
chmod 755 "$work"
export NETRIG_PREFIX=pcold NETRIG_NET=10.83 NETRIG_DATA=/var/tmp/posh-cold-data NETRIG_MNT=/mnt/posh-cold
export NETRIG_STATE=$work/rig-state LC_ALL=C
unset POSH_CONFIG
proxies=()
cleanup() {
  for pid in "${proxies[@]}"; do kill "$pid" 2> /dev/null || true; done
  "$rig" down > /dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
data=$NETRIG_DATA mnt=$NETRIG_MNT

if [ ! -f "$data/big/big.log" ] || [ "$(find "$data/small" -name '*.txt' | wc -l)" != 1000 ]; then
  rm -rf "$data"
  mkdir -p "$data/big" "$data/small"
  awk 'BEGIN { srand(1); split("INFO request|WARN slow|ERROR upstream|DEBUG cache|INFO done", lv, "|")
    for (i = 0; bytes < 200000000; i++) {
      line = sprintf("2026-12-02T10:%02d:%02d %s id=%d took=%dms", int(i / 60) % 60, i % 60, lv[int(rand() * 5) + 1], i, int(rand() * 1000))
      print line; bytes += length(line) + 1 } }' > "$data/big/big.log"
  awk -v dir="$data/small" 'BEGIN { srand(2); split("alpha beta TODO note fixme done", w, " ")
    for (k = 0; k < 1000; k++) { file = sprintf("%s/f%04d.txt", dir, k)
      for (j = int(rand() * 35) + 5; j > 0; j--) { line = w[int(rand() * 6) + 1]
        for (n = 1; n < 8; n++) line = line " " w[int(rand() * 6) + 1]
        print line > file }
      close(file) } }'
fi
printf "cat big/big.log | grep 'ERROR upstream' | wc -l\n" > "$work/cold.sh"
# shellcheck disable=SC2016
printf 'for f in small/*.txt; do n=$(grep -c TODO "$f"); echo "$f $n"; done\n' > "$work/calls.sh"
for s in cold calls; do (cd "$data" && bash "$work/$s.sh" > "$work/truth-$s"); done

quiet() { "$@" > "$work/said" 2>&1 || { cat "$work/said" >&2; return 1; }; }
quiet "$rig" up --rtt "$rtt" --rate "$rate"
eval "$("$rig" env)"
# As root, posh-proxy serves only as another user (SECURITY.md).
as_user=()
[ "$(id -u)" != 0 ] || as_user=(--user nobody)
for b in "${!builds[@]}"; do
  mkdir -p "$work/client-$b" "$work/proxy-$b"
  XDG_STATE_HOME=$work/client-$b "${builds[b]}/posh-exec" --print-identity > "$work/authorized-$b" 2> /dev/null
  [ "$(id -u)" != 0 ] || chown -R nobody: "$data" "$work/proxy-$b" "$work/authorized-$b"
  port=$((47800 + b))
  "$rig" exec storage "${builds[b]}/posh-proxy" --export "$data" --listen "$NETRIG_STORAGE_IP:$port" \
    --state-dir "$work/proxy-$b" --authorized-clients "$work/authorized-$b" "${as_user[@]}" > "$work/proxy-$b.log" 2>&1 &
  proxies+=($!)
  # The client sits on the same link: without [client], posh assumes 10 ms on its side.
  printf '[client]\nrtt = "%sms"\nbandwidth = "%sMbit"\n\n' "$rtt" "$rate" > "$work/posh-$b.toml"
  printf '[[mount]]\nname = "data"\npath = "%s"\nexport = "%s"\nproxy = "%s:%s"\nrtt = "%sms"\nbandwidth = "%sMbit"\n' \
    "$mnt" "$data" "$NETRIG_STORAGE_IP" "$port" "$rtt" "$rate" >> "$work/posh-$b.toml"
  for _ in $(seq 100); do grep -q listening "$work/proxy-$b.log" && break; sleep 0.1; done
  grep -q listening "$work/proxy-$b.log" || { echo "the proxy did not start:" >&2; cat "$work/proxy-$b.log" >&2; exit 1; }
done

# run SYSTEM SCRIPT: seconds of one run from the mount's directory; the output checked.
run() {
  local system=$1 script=$2 start end
  start=$(date +%s%N)
  case $system in
    bash) (cd "$mnt" && bash "$work/$script.sh") > "$work/out" 2>&1 ;;
    posh-*) "$rig" exec client env XDG_STATE_HOME="$work/client-${system#posh-}" HOME="$work" LC_ALL=C sh -c \
      "cd '$mnt' && exec '${builds[${system#posh-}]}/posh-exec' --config '$work/posh-${system#posh-}.toml' --stats '$work/stats' '$work/$script.sh'" \
      > "$work/out" 2>&1 ;;
  esac
  end=$(date +%s%N)
  cmp -s "$work/out" "$work/truth-$script" || { echo "FAIL: $system $script: output differs from bash's at the storage" >&2; diff "$work/out" "$work/truth-$script" | head >&2; exit 1; }
  echo "scale=3; ($end - $start) / 1000000000" | bc
}
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

systems=(bash)
for b in "${!builds[@]}"; do systems+=("posh-$b"); done
declare -A times
for r in $(seq "$rounds"); do
  for case in cold-fresh cold-warm calls-fresh calls-warm; do
    script=${case%-*}
    for system in "${systems[@]}"; do
      if [ "${case#*-}" = fresh ]; then quiet "$rig" remount; else run "$system" "$script" > /dev/null; fi
      t=$(run "$system" "$script")
      times[$case/$system]+="$t "
    done
  done
  echo "round $r done" >&2
done
echo "link $link (rtt ${rtt} ms, ${rate} Mbit/s), median of $rounds interleaved rounds; posh-0: $bin${OTHER_BIN:+, posh-1: $OTHER_BIN}"
for case in cold-fresh cold-warm calls-fresh calls-warm; do
  line="$case:"
  b=$(median ${times[$case/bash]})
  for system in "${systems[@]}"; do
    # shellcheck disable=SC2086
    t=$(median ${times[$case/$system]})
    line+=" $system ${t}s (all: ${times[$case/$system]% })"
    [ "$system" = bash ] || line+=" a/b $(echo "scale=2; $b / $t" | bc)"
    line+=";"
  done
  echo "$line"
done
