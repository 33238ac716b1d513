# Pipelines inside loops, loops inside pipelines, and while read from a file.
# status: 0
while IFS=, read -r id name city age; do
  [ "$id" = id ] && continue
  echo "$name" | tr ' ' '_' | tr a-z A-Z
done < data/people.csv
for f in data/words.txt data/numbers.txt "data/file with spaces.txt"; do
  printf '%s: ' "$f"; cat "$f" | wc -l
done
n=0
cat data/words.txt | while read -r w; do n=$((n + 1)); done
echo "n after piped loop: $n"
while read -r w; do n=$((n + 1)); done < data/words.txt
echo "n after redirected loop: $n"
for i in 1 2 3; do echo "$i"; done | sort -r | tr '\n' ' '; echo
seq 5 | while read -r i; do if [ $((i % 2)) -eq 0 ]; then echo even; else echo odd; fi; done | sort | uniq -c
