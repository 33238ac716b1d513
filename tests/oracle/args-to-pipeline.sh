# Script arguments used in a pipeline: a pattern and a file name with a space.
# args: app 'data/file with spaces.txt' data/words.txt
# status: 0
pattern=$1; shift
grep -i "$pattern" "$@" | sort
grep -c -- "$pattern" "${@: -1}"
cat "$1" | wc -w
