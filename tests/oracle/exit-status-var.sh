# $? after commands, builtins, failing commands and arithmetic.
# status: 0
true; echo $?
false; echo $?
grep -q nosuch data/words.txt; echo $?
grep -q apple data/missing.txt 2>/dev/null; echo $?
(exit 42); echo $?
((0)); echo $?
((5)); echo $?
test -f data/words.txt; echo $?
[ -d data/words.txt ]; echo $?
x=$(exit 9); echo $?
