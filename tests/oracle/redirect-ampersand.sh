# &> and &>> send stdout and stderr to one file; < reads; <> and fd numbers.
# status: 0
ls data/words.txt data/missing &> all.txt
echo extra &>> all.txt
cat all.txt
wc -l < data/words.txt
sort < data/words.txt | uniq -d
exec 3< data/numbers.txt
read -r one <&3
read -r two <&3
exec 3<&-
echo "$one $two"
exec 4> fd4.txt
echo "via fd 4" >&4
exec 4>&-
cat fd4.txt
echo "to stderr" >&2
