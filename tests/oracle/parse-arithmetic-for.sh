# An arithmetic `for ((;;))` loop, which posh's parser does not read, runs as bash runs it; the
# pipeline after it still goes to the runtime.
# status: 0
# handed: 1
for ((i = 0; i < 3; i++)); do
  echo "i=$i"
done
for (( ; ; )); do break; done
grep -c e data/words.txt | tr -d ' '
