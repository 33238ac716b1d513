# Issue 36 item 2: process substitution descriptors (/dev/fd/61, not 63) (minimized).
# seed: 308
# mode: mounted
# differed: stdout
diff <(sort data/words.txt) <(sort -u data/words.txt)
echo <(:) <(:)
for w5 in $(head -n 2 data/words.txt); do
  echo "$w5"
done &> both7.txt
