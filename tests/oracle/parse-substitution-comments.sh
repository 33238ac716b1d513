# A command substitution holding a comment, or a backslash-newline, which posh's parser does not
# read in some forms, runs as bash runs it; the pipelines in and around it go to the runtime.
# status: 0
# handed: 4
count=$(grep -c a data/words.txt # words with an a
)
echo "count $count"
lines=$(wc -l \
  < data/numbers.txt)
echo "lines $lines"
sort -r data/numbers.txt | head -n 2
grep -c e data/words.txt | tr -d ' '
