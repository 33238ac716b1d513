# The plan follows literal cds (`cd DIR`, `cd DIR || exit`, `cd DIR && ...`); after any other cd
# (a variable, a loop, a subshell) relative words are placed when the script runs.
# status: 0
cd data || exit 1
grep -c a words.txt
sort -r numbers.txt | head -n 3
cd sub && cat nested.txt | wc -l
cd ../..
wc -l data/words.txt
( cd data; grep -c e words.txt )
grep -c e data/words.txt
for d in data data/sub; do
  cd "$d"
  ls | sort | head -n 2
  cd - > /dev/null
done
dir=data
cd "$dir"
grep -c o words.txt | tr -d ' '
