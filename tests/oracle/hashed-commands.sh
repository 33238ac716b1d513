# A command the runtime ran alone enters bash's hash table, as bash's own search for it would
# have it (the commands of a pipeline never do: bash searches for them in subshells).
# status: 0
# handed: 2
sort data/numbers.txt | head -n 1
hash -t head 2>&1 || echo "head not hashed"
grep -c a data/words.txt
hash -t grep
type grep
