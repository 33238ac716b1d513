# Large streams through pipes: a megabyte to stdout, sorting, and a large file written.
# status: 0
seq 1 200000 | sort -r | head -n 5
seq 1 200000 | sort -rn | tail -n 3
seq 1 100000 > big.txt
wc -l big.txt
seq 1 200000
