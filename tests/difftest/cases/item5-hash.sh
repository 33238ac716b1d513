# Issue 36 item 5: a command the runtime ran is not hashed (minimized).
# seed: 306
# mode: mounted
# differed: stdout
sort data/words.txt > /dev/null; type sort
