# rev stops at the first byte that is no character of the locale and writes nothing after it: its copies of a split went on with the other files.
# seed: 20261203
# mode: mounted
# differed: files
cat data/utf8.txt data/sub/nested.txt | rev | tr -d aeiou >| clobber.txt
echo "status $?"
