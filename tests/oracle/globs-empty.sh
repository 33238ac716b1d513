# A glob matching nothing stays literal (nullglob off), then with nullglob and failglob.
# status: 1
echo data/*.nomatch
for f in data/*.nomatch; do echo "loop: $f"; done
ls data/*.nomatch
echo "ls: $?"
shopt -s nullglob
echo "null: [" data/*.nomatch "]"
set -- data/*.nomatch
echo "count: $#"
shopt -u nullglob
shopt -s failglob
echo data/*.nomatch
echo "after failglob: $?"
shopt -u failglob
(exit 1)
