# An ERR trap fires for failing commands (not in conditions), with $LINENO.
# status: 0
trap 'echo "ERR at line $LINENO status $?"' ERR
false
grep nosuch data/words.txt
if ! grep -q nosuch data/words.txt; then echo "in condition: no trap"; fi
cat data/words.txt | grep nosuch | sort
echo ok
trap - ERR
false
echo end
