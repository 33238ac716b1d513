# A CSV report through awk, sed, sort and join-like steps.
# status: 0
tail -n +2 data/people.csv | awk -F, '{print $4, $2}' | sort -n | sed 's/ /: /' | tail -n 3
awk -F, 'NR > 1 {s += $4; n++} END {printf "avg %.2f over %d\n", s / n, n}' data/people.csv
sed -n '2,4p' data/people.csv | cut -d, -f3 | sort
grep -n New data/people.csv
tr ',' '\t' < data/people.csv | head -n 2 | cat -A
