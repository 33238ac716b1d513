#!/usr/bin/env bash
# Many clients at once on the emulated link (../shared/rig): CLIENTS people (default 20) each run
# a script over their own files on three mounts at the same moment, with bash over sshfs, and
# with posh-exec and three posh-proxy processes at the storage host (each client its own
# identity, each proxy with its default --max-jobs and --slot-wait unless MAX_JOBS is set).
# It is issue 13's load test
# (posh-exec/tests/distributed.rs, `twenty_clients_on_three_proxies_...`) as a benchmark:
# wall time of the whole wave, medians of interleaved rounds (a fresh sshfs mount before each
# wave), every client's output compared with bash's at the storage, the commands a busy proxy
# left to their client (from --stats), and the proxies' peak memory.
#
#   [ROUNDS=3] [CLIENTS=20] [LINK=wan|dc] [MAX_JOBS=N] bench/load.sh
#
# Needs root (the rig), sshfs, bc. Builds release binaries (`cargo build --release -p
# posh-exec`). These machines are shared and noisy: compare within a run.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rig=$root/../shared/rig/netrig.sh
rounds=${ROUNDS:-3} clients=${CLIENTS:-20} link=${LINK:-wan}
# MAX_JOBS: each proxy's --max-jobs (default: the proxy's own default)
slots=()
[ -z "${MAX_JOBS:-}" ] || slots=(--max-jobs "$MAX_JOBS")
case $link in
  wan) rtt=20 rate=600 ;;
  dc) rtt=0.5 rate=5000 ;;
  *) echo "LINK must be wan or dc" >&2; exit 2 ;;
esac
[ -x "$rig" ] || { echo "load.sh: $rig is missing (../shared beside the project)" >&2; exit 2; }
cargo build --release -q -p posh-exec -p posh-proxy --manifest-path "$root/Cargo.toml"
bin=${CARGO_TARGET_DIR:-$root/target}/release

work=$(mktemp -d)
export NETRIG_PREFIX=pload NETRIG_NET=10.81 NETRIG_DATA=/var/tmp/posh-load-data NETRIG_MNT=/mnt/posh-load
export NETRIG_STATE=$work/rig-state LC_ALL=C XDG_CONFIG_HOME=$work/config
unset POSH_CONFIG
proxies=()
cleanup() {
  for pid in "${proxies[@]}"; do kill "$pid" 2>/dev/null || true; done
  "$rig" down > /dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
data=$NETRIG_DATA mnt=$NETRIG_MNT
mounts=(east west north)

# Inputs at the storage: each client its own log of 100,000 lines (about 3 MB) per mount, as
# people analysing their own data (the same file for all would be read once through sshfs and
# then from the client's page cache).
rm -rf "$data"
for n in 0 1 2; do
  mkdir -p "$data/${mounts[n]}"
  awk -v m="${mounts[n]}" -v k=$((n + 3)) -v dir="$data/${mounts[n]}" -v clients="$clients" 'BEGIN {
    split("INFO WARN ERROR", level, " ")
    for (c = 1; c <= clients; c++) {
      file = dir "/app-" c ".log"
      for (i = 0; i < 100000; i++) printf "%d %s %s %d\n", i, level[(i * k + c) % 7 % 3 + 1], m, (i + c) % 11 > file
      close(file)
    } }'
done
for i in $(seq "$clients"); do
  cat > "$work/s-$i.sh" <<SH
grep -c ERROR east/app-$i.log
cat east/app-$i.log west/app-$i.log | grep WARN | cut -d " " -f 3,4 | sort | uniq -c
sort -k 4 -n -r north/app-$i.log | head -n 3
grep -h " 7\$" east/app-$i.log west/app-$i.log north/app-$i.log | wc -l
SH
  (cd "$data" && bash "$work/s-$i.sh" > "$work/truth-$i")
done

# quiet COMMAND...: its messages only when it fails.
quiet() { "$@" > "$work/said" 2>&1 || { cat "$work/said" >&2; return 1; }; }
quiet "$rig" up --rtt "$rtt" --rate "$rate"
eval "$("$rig" env)"
for i in $(seq "$clients"); do
  XDG_STATE_HOME=$work/client-$i "$bin/posh-exec" --print-identity >> "$work/authorized" 2> /dev/null
done
toml=$work/posh.toml
: > "$toml"
# As root, posh-proxy serves only as another user (SECURITY.md): the exports and its state are
# that user's, as in a deployment.
as_user=()
if [ "$(id -u)" = 0 ]; then
  as_user=(--user nobody)
  chmod o+x "$work"
  mkdir -p "${mounts[@]/#/$work/proxy-}"
  chown -R nobody: "$data" "${mounts[@]/#/$work/proxy-}" "$work/authorized"
fi
for n in 0 1 2; do
  m=${mounts[n]} port=$((47600 + n))
  "$rig" exec storage "$bin/posh-proxy" --export "$data/$m" --listen "$NETRIG_STORAGE_IP:$port" \
    --state-dir "$work/proxy-$m" --authorized-clients "$work/authorized" "${slots[@]}" "${as_user[@]}" \
    > "$work/proxy-$m.log" 2>&1 &
  proxies+=($!)
  printf '[[mount]]\nname = "%s"\npath = "%s/%s"\nexport = "%s/%s"\nproxy = "%s:%s"\nrtt = "%sms"\nbandwidth = "%sMbit"\n\n' \
    "$m" "$mnt" "$m" "$data" "$m" "$NETRIG_STORAGE_IP" "$port" "$rtt" "$rate" >> "$toml"
done
for m in "${mounts[@]}"; do
  for _ in $(seq 100); do grep -q listening "$work/proxy-$m.log" && break; sleep 0.1; done
  grep -q listening "$work/proxy-$m.log" || { echo "load.sh: the proxy for $m did not start:" >&2; cat "$work/proxy-$m.log" >&2; exit 1; }
done

# wave SYSTEM: every client at once; prints the wave's wall time in seconds.
wave() {
  local system=$1 i start end pids=()
  quiet "$rig" remount
  rm -f "$work"/out-* "$work"/stats-*
  start=$(date +%s%N)
  for i in $(seq "$clients"); do
    if [ "$system" = bash ]; then
      (cd "$mnt" && bash "$work/s-$i.sh" > "$work/out-$i" 2>&1) &
    elif [ "$system" = storage ]; then
      (cd "$data" && bash "$work/s-$i.sh" > "$work/out-$i" 2>&1) &
    else
      "$rig" exec client env XDG_STATE_HOME="$work/client-$i" XDG_CONFIG_HOME="$XDG_CONFIG_HOME" LC_ALL=C \
        sh -c "cd '$mnt' && exec '$bin/posh-exec' --config '$toml' --stats '$work/stats-$i' '$work/s-$i.sh' > '$work/out-$i' 2>&1" &
    fi
    pids+=($!)
  done
  for i in "${pids[@]}"; do wait "$i" || { echo "load.sh: a $system client failed" >&2; exit 1; }; done
  end=$(date +%s%N)
  for i in $(seq "$clients"); do
    grep -v 'is busy.*at the client' "$work/out-$i" | cmp -s - "$work/truth-$i" \
      || { echo "load.sh: FAIL: $system client $i's output differs from bash's at the storage" >&2; diff "$work/out-$i" "$work/truth-$i" >&2 || true; exit 1; }
  done
  echo "scale=3; ($end - $start) / 1000000000" | bc
}
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
busy() { cat "$work"/stats-* | grep -o '"why":"run at the client: proxy [^"]*is busy' | wc -l || true; }

# The storage wave (bash at the storage, no link) is the floor: client and storage share this
# machine's cores, so a wave that nears it is bound by the CPU, not by the link.
bash_runs=() posh_runs=() storage_runs=()
for r in $(seq "$rounds"); do
  b=$(wave bash)
  p=$(wave posh)
  f=$(busy)
  c=$(wave storage)
  bash_runs+=("$b") posh_runs+=("$p") storage_runs+=("$c")
  echo "round $r: bash over sshfs ${b} s, posh-exec ${p} s (${f} commands left to their client by a busy proxy), bash at the storage ${c} s"
done
b=$(median "${bash_runs[@]}") p=$(median "${posh_runs[@]}") c=$(median "${storage_runs[@]}")
# netrig.sh and `ip netns exec` exec the proxy: each pid is a posh-proxy's.
memory=$(for pid in "${proxies[@]}"; do awk '/^VmHWM/ { printf "%s %s, ", $2, $3 }' "/proc/$pid/status"; done)
echo "$clients clients at once on the $link link ($rtt ms, $rate Mbit/s), median of $rounds interleaved rounds:" \
  "bash over sshfs ${b} s, posh-exec ${p} s, $(echo "scale=2; $b / $p" | bc)x; bash at the storage ${c} s;" \
  "every output identical;" \
  "proxies' peak memory ${memory%, }"
