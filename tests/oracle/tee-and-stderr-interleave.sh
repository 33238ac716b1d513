# stderr of commands in a pipeline goes straight to the script's stderr.
# status: 0
# (The error is written before the output exists, so even into one file the order is fixed.)
{ echo err1 >&2; echo out1; } | cat
cat data/missing.txt data/numbers.txt 2>&1 | head -n 2
ls data/missing 2>&1 | sed 's/^/[x] /'
sort data/missing.txt | wc -l
