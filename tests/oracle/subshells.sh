# Subshells do not change the parent's variables, directory or options.
# status: 0
x=outer
(x=inner; cd data; echo "in: $x $(ls | head -n 2 | tr '\n' ' ')")
echo "out: $x"
pwd | sed "s|$HOME|~|"
( set -e; false; echo "not reached" ); echo "subshell status: $?"
( exit 6 ) || echo "subshell exited $?"
y=$( (echo a; echo b) | wc -l)
echo "lines: $y"
{ echo grouped; echo braces; } | tr a-z A-Z
