# > truncates, >> appends, a redirection before the command, and >| under noclobber.
# status: 0
echo first > out.txt
echo second >> out.txt
sort -r data/words.txt >> out.txt
> empty-made.txt
>wordcount.txt wc -l data/words.txt
echo truncated > trunc.txt
echo again > trunc.txt
set -C
echo clobber > out.txt
echo "noclobber status: $?"
echo forced >| trunc.txt
set +C
cat out.txt trunc.txt wordcount.txt
echo into-data > data/written.txt
echo appended >> data/words.txt
tail -n 2 data/words.txt
