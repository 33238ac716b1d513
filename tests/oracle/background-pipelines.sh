# Pipelines in the background handed to the runtime: `$!` and `wait $!` with its status, `wait`
# for all, what they write, one in a background subshell, and one that selects nothing.
# status: 0
# handed: 6
sort data/words.txt | uniq -c > data/bg-counts.txt &
first=$!
grep -c a data/words.txt > data/bg-count.txt &
wait $first
echo "first: $?"
wait
cat data/bg-counts.txt data/bg-count.txt
grep -c zzz data/words.txt > /dev/null &
wait $!
echo "no match: $?"
(sort -r data/numbers.txt | head -n 3 > data/bg-sub.txt) &
wait
cat data/bg-sub.txt
