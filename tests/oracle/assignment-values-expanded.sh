# Assignments before a command whose values bash expands: a parameter, a default, parts around
# one, and braces and globs kept literal (an assignment's value is neither brace-expanded nor
# globbed nor split).
# status: 0
# handed: 3
loc=C
n=3
spaced="two  words *"
LC_ALL=$loc sort data/words.txt | head -n $n
sort data/words.txt | TAG=x{a,b}* OUT=${out:-data}/x SPACED=$spaced awk 'END { print NR, ENVIRON["TAG"], ENVIRON["OUT"], ENVIRON["SPACED"] }'
LC_ALL="$loc" TZ=${tz:-UTC} sort -r data/numbers.txt | head -n 2
