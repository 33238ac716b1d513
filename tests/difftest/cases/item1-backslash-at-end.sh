# Issue 36 item 1: the file ends in a backslash-newline inside a pipeline (minimized).
# seed: 302
# mode: mounted
# differed: files, plan
uniq -c data/empty.txt \
