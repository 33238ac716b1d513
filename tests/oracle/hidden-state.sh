# The rewrite's own state stays out of the script's view: no variable of posh's in `compgen -v`,
# `set` or `declare -p`, and `_` after a pipeline the runtime ran is the last word of the last
# simple command, as bash leaves it.
# status: 0
# handed: 2
grep -c a data/words.txt
compgen -v | grep -c posh
set | grep -c __posh
declare -p | grep -c __posh
sort data/words.txt | head -n 1 > /dev/null
declare -p _
