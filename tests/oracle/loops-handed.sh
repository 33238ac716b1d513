# Top-level `for` loops handed to the runtime whole: bash expands the words (a list, a glob, a
# substitution, none) and the expansions of the loop variable the body uses (`${f%.txt}`), the
# body's pipelines run in order for each word (as one request to the proxy when every iteration
# lands there), statuses and `pipefail` as bash's, `set -e` stops at the first failing pipeline,
# and the loop variable ends as bash leaves it. Unquoted, a word with a blank is split by bash,
# which then runs the loop itself, each pipeline a call.
# status: 2
# handed: 42
# handed-mounted: 40
for f in data/words.txt data/numbers.txt "data/file with spaces.txt"; do
  wc -l "$f"
  grep -c a "$f" >> counts.txt
done
echo "last: $f, status $?"
printf "%s\n" "$(< counts.txt)"
for f in data/*.txt; do
  head -n 1 "$f" | tr a-z A-Z
done
for f in $(ls data/sub); do
  sort -r "data/sub/$f" > "data/sub/sorted-$f"
done
ls data/sub
for f in; do cat "$f"; done
echo "none: $? ${f}"
for f in data/words.txt data/missing.txt data/numbers.txt; do
  grep -c 1 "$f"
done
echo "no errexit: $?"
set -o pipefail
for f in data/missing.txt data/words.txt; do
  cat "$f" | wc -l
done
echo "pipefail, last iteration fine: $?"
for f in data/words.txt data/missing.txt; do
  cat "$f" | wc -l
done
echo "pipefail, last iteration failing: $?"
set +o pipefail
out=data
for name in words numbers; do
  LC_ALL=C sort -r "$out/$name.txt" | head -n 2 > "$out/$name.rev"
  wc -c "${out}/${name}.rev"
done
cat data/words.rev data/numbers.rev
for f in data/words.txt data/numbers.txt; do
  sort -r "$f" > "data/${f#data/}.rev"
  wc -l "data/${f##*/}.rev" "${f%.txt}.txt" "${f/words/numbers}"
done
for f in data/words.txt data/numbers.txt; do
  cat $f | wc -c
done
IN=data
for f in words numbers; do
  sort -r $IN/$f.txt | head -n 1 > $IN/$f.top
done
cat data/words.top data/numbers.top
for f in words "file with spaces"; do
  wc -l $IN/$f.txt
done
echo "split by bash: $?"
set -e
for f in data/words.txt data/missing.txt data/numbers.txt; do
  grep -c a "$f"
  wc -l "$f"
done
echo "not reached"
