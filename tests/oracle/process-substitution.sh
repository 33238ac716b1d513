# Process substitution: diff <(...) <(...), and >(...) writing a file.
# status: 1
diff <(sort data/words.txt) <(sort -u data/words.txt)
echo "diff status: $?"
comm -12 <(sort -u data/words.txt) <(printf 'apple\nkiwi\nzzz\n')
paste <(cut -d, -f1 data/people.csv) <(cut -d, -f2 data/people.csv) | head -n 3
tee >(sort -u > sorted-from-tee.txt) < data/words.txt > /dev/null
wait $!
cat sorted-from-tee.txt
diff <(echo a) <(echo b) > /dev/null
