# Issue 36 item 2: caller in a function in a pipeline prints NULL (minimized).
# seed: 1001
# mode: proxied
# differed: stdout
f8() {
  caller
}
f8 | awk '{ print NR ": " $0 }'
sort -t, -k4 -n data/people.csv | sed 's/e/E/g'
