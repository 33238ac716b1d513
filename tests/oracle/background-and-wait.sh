# Background jobs writing files, then wait, and wait's status.
# status: 0
sort data/words.txt > bg-sorted.txt &
seq 5 | tac > bg-tac.txt &
wait
cat bg-sorted.txt bg-tac.txt | wc -l
(exit 4) &
wait $!
echo "waited status: $?"
