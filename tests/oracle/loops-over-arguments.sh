# A loop over the script's arguments (`for f; do`) and an empty list (`for f in; do`), handed
# to the runtime whole; a loop whose body is not only pipelines stays with bash.
# args: data/words.txt 'data/file with spaces.txt' data/numbers.txt
# status: 0
# handed: 6
for f; do
  tail -n 1 "$f"
done
echo "after: $f"
for f in; do
  cat "$f"
done
echo "empty: $? $f"
for f in "$@"; do
  wc -c "$f" || echo "no $f"
done
