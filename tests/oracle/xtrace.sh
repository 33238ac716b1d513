# `set -x` traces a handed-over command as bash traces it (its assignments, then its words, as
# bash quotes them), at bash's depth inside a command substitution, and never the runtime call.
# status: 0
# handed: 3
set -x
grep -c a data/words.txt
LC_ALL=C wc -l 'data/file with spaces.txt'
n=$(grep -c e data/words.txt)
echo "$n"
set +x
