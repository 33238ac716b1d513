# Pipelines inside command substitutions (and backquotes, nested, in here-documents) handed to
# the runtime: the value with its trailing newlines stripped, `$?` of the substitution, `set -e`
# on an assignment from one that fails, and a here-string holding one (which stays with bash
# while the pipeline inside it is handed over).
# status: 2
# handed: 12
n=$(grep -c apple data/words.txt)
echo "n=$n"
top=$(sort -rn data/numbers.txt | head -n 2)
echo "top=$top"
echo "counted: $(cat data/words.txt | sort | uniq -c | sort -rn | head -n 2)"
none=$(grep -c zzz data/words.txt)
echo "status $? none=$none"
echo "lines: $(echo "$(wc -l < data/numbers.txt)")"
first=`sort data/words.txt | head -n 1`
echo "first=$first"
sort -r data/numbers.txt <<< "$(grep -c a data/words.txt)" | head -n 2
cat <<END | tr a-z A-Z
$(head -n 1 data/words.txt)
$(tail -n 1 data/numbers.txt)
END
newlines=$(printf 'x\n\n\n' | cat; cut -c1 data/words.txt | head -n 2)
echo "[$newlines]"
set -e
missing=$(grep -c zzz data/words.txt) || echo "failed with $?"
gone=$(sort data/missing.txt)
echo "not reached when bash exits $?"
