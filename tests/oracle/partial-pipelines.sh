# Pipelines bash keeps in part: the commands before a `while read` loop, a function or a command
# without annotation go to the runtime as a call of their own, bash runs the rest and the pipes
# between them. Statuses compose as bash's (last command, `pipefail`, `!`, `set -e`), `|&` keeps
# both streams in the pipe, and the parts run in substitutions and in the background.
# status: 1
# handed: 15
shout() { tr a-z A-Z; }
cat data/words.txt | grep a | while read -r w; do echo "got $w"; done
grep -v a data/words.txt | sort | shout
sort -n data/numbers.txt | shout | head -n 3
grep -h '^1' data/numbers.txt | factor | sort -k2 -n
echo "status $?"
grep zzz data/words.txt | sort | while read -r l; do echo "never $l"; done
echo "no pipefail: $?"
set -o pipefail
grep zzz data/words.txt | sort | while read -r l; do echo "never $l"; done
echo "pipefail: $?"
sort data/words.txt | uniq -c | shout | sort -rn | head -n 2
echo "pipefail with a function in the middle: $?"
if ! grep -q zzz data/words.txt | shout; then echo "negated by bash"; fi
set +o pipefail
grep -c a data/words.txt data/missing.txt |& while read -r l; do echo "[$l]"; done
n=$(cat data/words.txt | grep a | while read -r w; do echo "$w"; done | wc -l)
echo "n=$n"
cut -d, -f2 data/people.csv | tail -n +2 | while IFS= read -r name; do echo "person: $name"; done > names.txt &
wait $!
echo "background: $?"
{ read -r a; read -r b; echo "$a / $b"; } < names.txt
head -n 4 data/words.txt | tsort | sort
set -e
grep zzz data/words.txt | shout
echo "reached: the function's status is the pipeline's"
grep zzz data/words.txt | sort | while read -r l; do :; done
echo "reached: the loop's status is the pipeline's"
set -o pipefail
sort data/words.txt | grep zzz | shout
echo "not reached: under pipefail grep's status is the pipeline's"
