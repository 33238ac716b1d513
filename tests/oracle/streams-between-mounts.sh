# Commands reading files on two mounts (mounted: `data` and `data/sub`, nested in it): comm,
# join, paste, diff and cat run at one proxy, the other mount's files streamed to it by their own
# proxy; outputs, messages, statuses and written files stay bash's.
# status: 0
comm -12 data/thirds.txt data/sub/odd.txt | wc -l
comm -3 data/sub/odd.txt data/thirds.txt | tail -n 2
paste -d , data/thirds.txt data/sub/odd.txt | tail -n 2
diff data/thirds.txt data/sub/odd.txt | tail -n 3
echo "diff: ${PIPESTATUS[0]}"
diff -q data/sub/odd.txt data/thirds.txt
diff -u data/thirds.txt data/sub/odd.txt | tail -n 2
join data/thirds.txt data/sub/odd.txt > data/sub/joined.txt
wc -l < data/sub/joined.txt
cat data/thirds.txt data/numbers.txt data/sub/odd.txt > data/sub/all.txt
cat data/sub/all.txt | sort | uniq -d | wc -l
cat -n data/sub/odd.txt data/thirds.txt > data/sub/numbered.txt
tail -n 1 data/sub/numbered.txt
comm -12 data/thirds.txt data/sub/missing.txt
echo "comm of a missing file: $?"
join data/people.csv data/sub/nested.txt > data/sub/unsorted.txt
echo "unsorted join: $?"
join data/people.csv data/sub/nested.txt > data/sub/unsorted-both.txt 2>&1
cat data/sub/unsorted-both.txt
