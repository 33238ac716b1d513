# Globs of handed-over pipelines over a mount, which its proxy expands (issue 40): names with
# spaces and newlines, several directories, a pattern matching nothing, a glob partly local,
# one over two mounts, in a redirection target, in a loop's words, after a variable.
# status: 0
mkdir -p data/sub/made/deeper
touch data/sub/made/'two words.txt' data/sub/made/$'new\nline.txt' data/sub/made/.hidden.txt
touch data/sub/made/Upper.TXT data/sub/made/b.log data/sub/made/a.log data/sub/made/deeper/c.log
printf 'x\n' > data/sub/made/a.txt
cat data/sub/*.txt | wc -l
stat -c '[%n]' data/sub/made/* | cat
stat -c '[%n]' data/sub/made/*.none data/sub/made/?.txt 2>&1 | cat
stat -c '[%n]' data/sub/*/*.log ./data/sub/made/[ab].log | cat
cat data/sub/*.txt *.sh | wc -l
cat data/*/*.txt | wc -l
d=data/sub/made
stat -c '[%n]' $d/*.log | cat
stat -c '[%n]' "$d"/*.log | cat
for f in data/sub/made/*.log; do wc -c "$f" | cat; done
sort data/words.txt | head -2 > data/sub/made/out*.txt
stat -c '[%n]' data/sub/made/o* | cat
cd data/sub
stat -c '[%n]' made/*.txt *.txt | cat
