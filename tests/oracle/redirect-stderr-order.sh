# 2> to a file, and the order of >f 2>&1 versus 2>&1 >f.
# status: 0
ls data/words.txt data/missing > both.txt 2>&1
ls data/words.txt data/missing 2>&1 > only-out.txt | sed 's/^/piped: /'
ls data/words.txt data/missing 2> err.txt
cat data/missing.txt 2>> err.txt
echo "--- both"; cat both.txt
echo "--- only-out"; cat only-out.txt
echo "--- err"; cat err.txt
{ echo to-out; echo to-err >&2; } 2>/dev/null
{ echo to-out; echo to-err >&2; } 3>&1 1>&2 2>&3 | sed 's/^/swapped: /'
