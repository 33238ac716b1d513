# LC_ALL=C versus C.UTF-8: character counts, sorting and matching non-ASCII text.
# status: 0
echo "locale: $LC_ALL"
sort data/utf8.txt
wc -m < data/utf8.txt
grep -c '^.....$' data/utf8.txt
s='café'; echo "${#s}"
LC_ALL=C.UTF-8 sort data/utf8.txt
LC_ALL=C.UTF-8 wc -m < data/utf8.txt
LC_ALL=C.UTF-8 grep -c '^.....$' data/utf8.txt
export LC_ALL=C.UTF-8
s='café'; echo "${#s}"
sort -f data/utf8.txt | head -n 3
cut -c1-2 data/utf8.txt | od -An -c | head -n 2
