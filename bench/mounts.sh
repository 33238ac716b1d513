#!/usr/bin/env bash
# Planning and running at scale (issue 40): `cat m*/f000.log | grep ERROR | wc -l` split across
# N embedded mounts (one in-process proxy per mount). For each N and each posh-exec given, the
# wall time of `--explain`, and of the run with its peak resident memory (GNU time's maximum
# RSS); medians of ROUNDS rounds, the binaries interleaved in each round; every run's output
# compared with bash's. Also `--explain` of a script of PIPELINES pipelines with the N mounts
# configured, each `cat mK/f*.log | grep ERROR | wc -l` of one mount's FILES files (issue 40's
# second case: 100 pipelines, 1,000 mounts, FILES=100); with RUN_SCRIPT=1 that script is run too
# (timed, its output compared with bash's). Say what else loads the machine when you quote the
# figures.
#
#   [ROUNDS=5] [MOUNTS="100 1000"] [FILES=1] [PIPELINES=100] [RUN_SCRIPT=1]
#     bench/mounts.sh POSH_EXEC [POSH_EXEC...]
#
# e.g. a build of main and one of a branch side by side:
#   bench/mounts.sh /tmp/main/target/release/posh-exec target/release/posh-exec
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: bench/mounts.sh POSH_EXEC [POSH_EXEC...]" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "mounts.sh: needs GNU time (/usr/bin/time)" >&2; exit 2; }
rounds=${ROUNDS:-5} files=${FILES:-1} pipelines=${PIPELINES:-100}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export LC_ALL=C HOME=$work/home XDG_CONFIG_HOME=$work/home/.config XDG_STATE_HOME=$work/home/.state
unset POSH_CONFIG XDG_RUNTIME_DIR
mkdir -p "$HOME"

# N mounts m0..m{N-1}, each with FILES logs of 50 lines.
make_mounts() {
  local dir=$1 n=$2
  mkdir -p "$dir"
  : > "$dir/posh.toml"
  for ((i = 0; i < n; i++)); do
    mkdir "$dir/m$i"
    awk -v m="$i" -v files="$files" -v dir="$dir/m$i" 'BEGIN {
      for (f = 0; f < files; f++) {
        file = sprintf("%s/f%03d.log", dir, f)
        for (l = 0; l < 50; l++) printf "%d %s m%d f%d\n", l, (l % 7 == 0 ? "ERROR" : "INFO"), m, f > file
        close(file)
      } }'
    printf '[[mount]]\nname = "m%d"\npath = "m%d"\nproxy = "embedded"\n\n' "$i" "$i" >> "$dir/posh.toml"
  done
  echo 'cat m*/f000.log | grep ERROR | wc -l' > "$dir/split.sh"
  for ((k = 0; k < pipelines; k++)); do
    echo "cat m$((k * n / pipelines))/f*.log | grep ERROR | wc -l"
  done > "$dir/script.sh"
}

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

printf '%-7s %-40s %12s %10s %12s %16s %13s\n' mounts posh-exec explain_s run_s run_peak_MB script_explain_s script_run_s
for n in ${MOUNTS:-100 1000}; do
  dir=$work/n$n
  make_mounts "$dir" "$n"
  expected=$(cd "$dir" && bash split.sh)
  expected_script=$(cd "$dir" && bash script.sh)
  for ((r = 0; r < rounds; r++)); do
    for k in $(seq 0 $(($# - 1))); do
      bin=${*:$((k + 1)):1}
      (cd "$dir" && /usr/bin/time -f '%e' -o "$work/e.$k.$r" "$bin" --explain split.sh > /dev/null)
      got=$(cd "$dir" && /usr/bin/time -f '%e %M' -o "$work/r.$k.$r" "$bin" split.sh)
      [ "$got" = "$expected" ] || { echo "mounts.sh: $bin over $n mounts: output differs from bash's" >&2; exit 1; }
      (cd "$dir" && /usr/bin/time -f '%e' -o "$work/se.$k.$r" "$bin" --explain script.sh > /dev/null)
      if [ "${RUN_SCRIPT:-0}" = 1 ]; then
        got=$(cd "$dir" && /usr/bin/time -f '%e' -o "$work/sr.$k.$r" "$bin" script.sh)
        [ "$got" = "$expected_script" ] || { echo "mounts.sh: $bin, script over $n mounts: output differs from bash's" >&2; exit 1; }
      else
        echo - > "$work/sr.$k.$r"
      fi
    done
  done
  for k in $(seq 0 $(($# - 1))); do
    bin=${*:$((k + 1)):1}
    explain=$(cat "$work"/e."$k".* | median)
    run=$(cut -d' ' -f1 "$work"/r."$k".* | median)
    peak=$(cut -d' ' -f2 "$work"/r."$k".* | median)
    script_explain=$(cat "$work"/se."$k".* | median)
    script_run=$(cat "$work"/sr."$k".* | median)
    printf '%-7s %-40s %12s %10s %12.1f %16s %13s\n' "$n" "$bin" "$explain" "$run" "$(echo "$peak / 1024" | bc -l)" \
      "$script_explain" "$script_run"
  done
  rm -f "$work"/e.* "$work"/r.* "$work"/se.* "$work"/sr.*
  rm -rf "$dir"
done
