# An empty file through pipelines: no lines, zero counts, sort of nothing.
# status: 0
cat data/empty.txt | sort | uniq -c
wc -l data/empty.txt
grep -c x data/empty.txt || echo "grep status $?"
cat data/empty.txt | head -n 1 | wc -c
sort data/empty.txt data/numbers.txt | head -n 2
