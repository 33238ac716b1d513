# cd, then relative paths for reading and writing; cd - and a failing cd.
# status: 0
cd data
wc -l words.txt numbers.txt
sort -u words.txt > ../unique-words.txt
cd sub
cat nested.txt ../words.txt | wc -l
cd - > /dev/null
echo "back: ${PWD##*/}"
cd ..
mkdir -p out/deeper
cd out/deeper
grep -h apple ../../data/words.txt > found.txt
cd ../..
cat out/deeper/found.txt
cd data/nosuchdir
echo "cd status: $?"
cd "data/dir with spaces" && cat inner.txt
