# Commands reading one file on each of two mounts (mounted: `data` and `data/sub`, nested in it):
# comm, join and paste run at one proxy with the other file streamed to it from its own proxy;
# outputs, messages, statuses and written files stay bash's.
# status: 0
comm -12 data/thirds.txt data/sub/odd.txt | wc -l
comm -3 data/sub/odd.txt data/thirds.txt | tail -n 2
paste -d , data/thirds.txt data/sub/odd.txt | tail -n 2
join data/thirds.txt data/sub/odd.txt > data/sub/joined.txt
wc -l < data/sub/joined.txt
comm -12 data/thirds.txt data/sub/missing.txt
echo "comm of a missing file: $?"
join data/people.csv data/sub/nested.txt > data/sub/unsorted.txt
echo "unsorted join: $?"
join data/people.csv data/sub/nested.txt > data/sub/unsorted-both.txt 2>&1
cat data/sub/unsorted-both.txt
