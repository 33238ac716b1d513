# Issue 36 item 8: a proxy's refusal (a path through ..) adds a warning on stderr (minimized).
# seed: 305
# mode: mounted
# differed: stderr
(cd data/sub && sort ../sub/nested.txt | head -n 1 | fold -w 4)
