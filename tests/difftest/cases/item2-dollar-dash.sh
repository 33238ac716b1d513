# Issue 36 item 2: $- gains c after a handed-over pipeline (minimized).
# seed: 204
# mode: mounted
# differed: stdout
echo "flags: $-"
cd data
cat ./utf8.txt ./numbers.txt
