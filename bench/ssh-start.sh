#!/usr/bin/env bash
# ssh:// on the rig's 20 ms / 600 Mbit link (../shared/rig): bash over sshfs, posh-exec with a
# proxy started through ssh for each run (proxy = "ssh://root@STORAGE"), and with linger = "10m"
# (after a first run, the next ones reach the proxy without ssh). Interleaved, a fresh sshfs mount
# before every run, every output compared with bash's; medians of ROUNDS. As root.
#
#   [ROUNDS=5] [BIN=target/debug] bench/ssh-start.sh
#
# Measured at e282b9f (debug build, 2-core machine, quiet), a 1.5M-line log, grep | awk | sort:
# bash over sshfs 9.38 s, ssh:// 1.62 s (5.8x), with linger 0.70 s (13.5x): starting the proxy
# through ssh (login across the link, key exchange, the proxy's start) costs about 0.9 s a run.
set -euo pipefail
RIG=${RIG:-$(cd "$(dirname "$0")/../.." && pwd)/shared/rig/netrig.sh}
BIN=${BIN:-$(cd "$(dirname "$0")/.." && pwd)/target/debug}
ROUNDS=${ROUNDS:-5}
$RIG up --rtt 20 --rate 600 >/dev/null
export $($RIG env)
STATE=/run/netrig-rig
S_IP=$NETRIG_STORAGE_IP
mkdir -p "$NETRIG_DATA/sshbench"
if [[ ! -s $NETRIG_DATA/sshbench/big.log ]]; then
  awk 'BEGIN { for (i = 0; i < 1500000; i++) printf "%d %s request %d served in %d ms\n", i, (i % 1000 == 7 ? "ERROR" : "INFO"), i % 4099, i % 97 }' >"$NETRIG_DATA/sshbench/big.log"
fi
W=$(mktemp -d); mkdir -p "$W/ssh" "$W/linger" "$W/state"
cat >"$W/s.sh" <<EOS
cd $NETRIG_MNT/sshbench
grep ERROR big.log | awk '{print \$4}' | sort | uniq -c | sort -rn | head -5
wc -l big.log
EOS
for v in ssh linger; do
  { printf '[[mount]]\npath = "%s"\nproxy = "ssh://root@%s"\nexport = "%s"\nproxy_program = "%s/posh-proxy"\nrtt = "20ms"\nbandwidth = "600Mbit"\n' \
      "$NETRIG_MNT" "$S_IP" "$NETRIG_DATA" "$BIN"; [[ $v == linger ]] && printf 'linger = "10m"\n'; } >"$W/$v/posh.toml"
done
SSHCMD="ssh -F /dev/null -i $STATE/client_key -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o Ciphers=aes128-gcm@openssh.com"
run() { # NAME DIR COMMAND...
  local name=$1 dir=$2; shift 2
  $RIG remount >/dev/null 2>&1
  local t0 t1
  t0=$(date +%s.%N)
  (cd "$dir" && ip netns exec rig-client env LC_ALL=C XDG_STATE_HOME="$W/state" XDG_CONFIG_HOME="$W/config" POSH_SSH_COMMAND="$SSHCMD" "$@" >"$W/$name.out" 2>"$W/$name.err")
  t1=$(date +%s.%N)
  echo "$name $(echo "$t1 - $t0" | bc)" >>"$W/times"
}
run warmup "$W/linger" "$BIN/posh-exec" "$W/s.sh"
run bash0 "$W/ssh" bash "$W/s.sh"
for r in $(seq "$ROUNDS"); do
  run bash "$W/ssh" bash "$W/s.sh"
  run ssh "$W/ssh" "$BIN/posh-exec" "$W/s.sh"
  run linger "$W/linger" "$BIN/posh-exec" "$W/s.sh"
  for v in ssh linger; do cmp -s "$W/$v.out" "$W/bash.out" || { echo "$v differs from bash"; cat "$W/$v.err"; exit 1; }; done
done
cat "$W/bash.out"
for v in bash ssh linger; do
  printf '%s median %s s\n' "$v" "$(awk -v v=$v '$1 == v { print $2 }' "$W/times" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')"
done
grep -v warmup "$W/times" | tr '\n' ' '; echo
# The lingering proxy: end it.
pkill -f "posh-proxy --over-ssh --export $NETRIG_DATA --linger" || true
rm -rf "$W"
