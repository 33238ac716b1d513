# set -o pipefail: the rightmost failing status wins.
# status: 2
false | true; echo "no pipefail: $?"
set -o pipefail
false | true; echo "pipefail: $?"
(exit 3) | (exit 4) | true; echo "rightmost: $?"
true | true; echo "all ok: $?"
grep nosuch data/words.txt | sort; echo "grep no match: $?"
cat data/missing.txt | sort | wc -l
echo "status: $?"
set -e
grep nosuch data/missing.txt | sort
echo "not reached"
