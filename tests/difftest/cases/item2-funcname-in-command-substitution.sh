# Issue 36 item 2: FUNCNAME lacks main in a function called in $(...) (minimized).
# seed: 71
# mode: mounted
# differed: stdout
f1() {
  echo "in ${FUNCNAME[*]}"
}
out10=$(f1); echo "got ${#out10} bytes"
sort data/numbers.txt > /dev/null
