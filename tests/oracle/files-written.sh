# Files created, overwritten, appended, copied, moved, deleted, and tee'd.
# status: 0
mkdir -p results
sort data/words.txt | uniq -c > results/counts.txt
cut -d, -f2,3 data/people.csv | tee results/people.txt | wc -l
cp data/numbers.txt results/n.txt
mv results/n.txt results/numbers.txt
echo temp > results/temp.txt
rm results/temp.txt
rm data/empty.txt
printf 'no newline' > results/partial.txt
seq 3 | tee -a results/partial.txt > /dev/null
ls results
