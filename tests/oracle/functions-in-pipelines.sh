# Shell functions as pipeline stages, reading stdin and writing stdout.
# status: 0
upper() { tr '[:lower:]' '[:upper:]'; }
count() { sort | uniq -c | sort -k1,1nr -k2; }
cat data/words.txt | upper | count
numbered() { local n=0 line; while IFS= read -r line; do n=$((n + 1)); echo "$n: $line"; done; }
grep -v '^id' data/people.csv | cut -d, -f2 | numbered | tail -n 3
