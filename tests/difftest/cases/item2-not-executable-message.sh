# Issue 36 item 2: the message for a missing script says environment: line N (minimized, then cut by hand).
# seed: 36
# mode: mounted
# differed: stderr
f8() {
  ./missing.sh arg; echo "status $?"
}
head -n 1 data/words.txt > /dev/null
f8
