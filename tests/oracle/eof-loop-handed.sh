# A loop handed over whole is the last thing in the file, with the newline after it.
# status: 0
for f in data/words.txt data/numbers.txt; do
  cat "$f" |
    wc -l
done
