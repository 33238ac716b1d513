# case, [[ ]], pattern matching and regular expressions.
# status: 0
for w in $(cat data/words.txt); do
  case $w in
    [A-Z]*) echo "capital: $w" ;;
    *an*) echo "has an: $w" ;;
    ?????) echo "five: $w" ;;
    *) ;;
  esac
done | sort
s="posh-2025-v1"
[[ $s =~ ^([a-z]+)-([0-9]+) ]] && echo "${BASH_REMATCH[1]} ${BASH_REMATCH[2]}"
[[ $s == posh* ]] && echo "glob match"
[[ -e data/empty.txt && ! -s data/empty.txt ]] && echo "empty exists"
