# Remote jobs that write stdout and stderr, many times over: with both streams into one file
# (`> log 2>&1`, the one-file modes) every byte must land, in bash's order. (Each command's
# order of stdout and stderr is fixed: stdout to a file or pipe is flushed at exit.)
# status: 0
for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30; do
  grep -n apple data/words.txt data/missing.txt
  wc -l data/words.txt data/nosuch.txt
  sort data/missing.txt data/numbers.txt | tail -n 1
done
exit 0
