# Command substitution in arguments, split into words or kept whole by quotes.
# status: 0
wc -l $(echo data/words.txt data/numbers.txt)
grep -c "$(head -n 1 data/words.txt)" data/words.txt
files=$(printf '%s\n' data/*.csv)
cut -d, -f2 $files | tail -n 2
echo "$(seq 3)"
echo $(seq 3)
total=$(awk '{s += $1} END {print s}' data/numbers.txt)
echo "total=$total"
echo "nested: $(echo "$(echo inner | tr a-z A-Z)")"
echo `echo backticks`
cat "$(echo 'data/file with spaces.txt')"
