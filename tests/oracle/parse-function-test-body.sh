# A function whose body is a `[[ ]]` test (`f() [[ ... ]]`), which posh's parser does not read,
# is defined and called as bash does; the pipeline after it still goes to the runtime, and a
# pipeline calling the function stays with bash.
# status: 0
# handed: 1
nonempty() [[ -s $1 ]]
nonempty data/words.txt && echo "words: not empty"
nonempty data/empty.txt || echo "empty: empty"
sort() [[ -n $1 ]]
sort x && echo "sort is a function now"
command sort data/words.txt | uniq | wc -l
grep -c a data/words.txt | tr -d ' '
