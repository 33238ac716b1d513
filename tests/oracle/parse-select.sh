# `select`, which posh's parser does not read, runs as bash runs it (stdin at its end: the menu
# on stderr, no choice); the pipeline after it still goes to the runtime.
# status: 0
# handed: 1
select choice in one two; do
  echo "chose $choice"
  break
done
echo "select ended"
sort data/words.txt | uniq -c | sort -rn | head -n 3
