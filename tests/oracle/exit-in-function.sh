# exit inside a function ends the script; return only leaves the function.
# status: 5
f() { echo "in f"; return 3; echo "not reached"; }
f; echo "f returned $?"
g() { echo "in g"; cat data/numbers.txt | head -n 1; exit 5; }
h() { echo "h calls g"; g; echo "not reached in h"; }
( g ); echo "g in a subshell: $?"
h
echo "not reached"
