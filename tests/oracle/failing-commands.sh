# Commands that fail: grep with no match, grep of a missing file, cat of a missing file.
# status: 1
grep nosuch data/words.txt
echo "grep no match: $?"
grep apple data/missing.txt
echo "grep missing file: $?"
cat data/missing.txt data/numbers.txt | wc -l
echo "cat: ${PIPESTATUS[0]}"
sort data/missing.txt
ls data/missing.txt
wc -l data/missing.txt data/words.txt
head -n 1 data/missing.txt
