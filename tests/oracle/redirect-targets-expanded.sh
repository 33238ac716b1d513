# Redirection targets bash expands: variables unquoted and quoted, loop variables, a glob that
# names one file, and targets that expand into no word or two (bash's "ambiguous redirect": the
# command does not run, the others of its pipeline do, earlier redirections are made).
# status: 0
# handed: 11
# handed-mounted: 10
out=data
name="sorted words"
sort data/words.txt > $out/sorted.txt
grep -c a data/words.txt > "$out/$name.txt"
for f in numbers people; do
  sort -r data/$f.* > $out/${f}.rev 2> $out/$f.err
done
touch data/target-1.out
sort -n -r data/numbers.txt > data/target-*.out
cut -c1-3 data/words.txt | sort -u > $out/$name.sorted
echo "status $?"
sort data/words.txt > data/made-first.txt > $nothing
echo "status $?"
tr a-z A-Z < $out/words.txt | sort > ~/upper.txt
cat data/sorted.txt | head -n 3 > ./$out/sub/../head.txt
ls data
