# set -e does not fire in if conditions, && and || lists, or negated pipelines.
# status: 3
set -e
if false | false; then echo then; else echo else; fi
false && echo "not printed"
echo "after &&"
false || echo "after ||"
! true
echo "after !"
f() { false; echo "in f after false (set -e ignored in && context)"; }
f && echo "f returned 0"
while false; do :; done
echo "before the end"
g() { return 3; }
g
echo "not reached"
