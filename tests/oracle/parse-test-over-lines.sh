# A `[[ ]]` test over several lines (after `&&`), which posh's parser does not read, runs as
# bash runs it; the pipeline after it still goes to the runtime.
# status: 0
# handed: 1
if [[ -f data/words.txt &&
      -s data/words.txt ]]; then
  echo "words is there"
fi
[[ a == a ||
   b == c ]] && echo "still true"
sort -r data/numbers.txt | head -n 3
