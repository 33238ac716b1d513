# readonly variables, local scoping, and the error for assigning a readonly variable (the script goes on).
# status: 0
x=global
f() { local x=local; echo "in f: $x"; g; }
g() { echo "in g (dynamic scope): $x"; }
f
echo "after f: $x"
readonly R=fixed
R=changed
echo "status: $? R=$R"
R=again echo "prefix assignment"
echo "still running"
