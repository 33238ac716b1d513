# What bash tells a script about itself holds in a script rewritten for the runtime: `$0`,
# FUNCNAME's `main`, `caller`, `$-`, the source stack as a sourced file reads it, the name and line
# in bash's messages (at top level and in a function), and the status a fatal expansion error
# ends the script with.
# status: 1
# handed: 1
grep -c a data/words.txt
f() { echo "${FUNCNAME[*]}"; caller; caller 0; }
f
echo "dash: $-"
echo "zero: $0"
printf 'echo "sourced: ${BASH_%s[*]}"\n' SOURCE > lib.sh
. ./lib.sh
no_such_command_at_top
g() { no_such_command_in_g; }
g
echo "${never_set:?is not set}"
echo "not reached"
