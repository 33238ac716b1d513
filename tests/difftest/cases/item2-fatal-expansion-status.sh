# Issue 36 item 2: a fatal ${x:?} exits 127 instead of 1 (minimized).
# seed: 38
# mode: mounted
# differed: status
echo "${unset3:?is not set}"
f5() {
  wc -l data/numbers.txt \
    | paste -sd, - | tac | nl >| clobber.txt
}
