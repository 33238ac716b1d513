# A backslash-newline inside a pipeline that does not end the file (from item 1's search).
# seed: 0
# mode: mounted
# differed: nothing (passes)
uniq -c data/numbers.txt \
  | wc -l
echo "after $?"
