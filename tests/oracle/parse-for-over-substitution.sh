# A `for` loop over a process substitution (`for f in <(...)`), which posh's parser does not
# read, runs as bash runs it; the pipeline after it still goes to the runtime.
# status: 0
# handed: 1
for f in <(printf '%s\n' a b); do
  cat "$f"
done
sort data/words.txt | uniq -c | sort -rn | head -n 2
