# Found by the differential tester (seed 9041, minimized): after a pipeline over several lines
# that fails, $LINENO in the ERR trap was the line of the call that stands for it (its first), where
# bash says the line of its last command. The call now stands on that line.
# seed: 9041
# mode: mounted
# differed: stdout
trap 'echo "err trap at $LINENO: $?"' ERR
cd data
sed -n '2,4p' ./sub/nested.txt \
  | uniq -c |
  grep -v e
