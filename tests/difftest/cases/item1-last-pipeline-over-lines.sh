# Issue 36 item 1: the file ends in a pipeline over two lines (minimized).
# seed: 208
# mode: mounted
# differed: status, stdout, stderr, files
grep -i e data/words.txt |
  cat 2> err5.txt
