# Issue 36 item 3: set -x traces with one more + and shows the runtime's call (cut by hand).
# seed: 41
# mode: mounted
# differed: stderr
set -x; wc -l data/words.txt; set +x
