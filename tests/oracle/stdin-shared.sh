# Commands sharing a seekable stdin: head leaves the rest for the next command.
# stdin: data/numbers.txt
# status: 0
head -n 2
echo ---
head -n 3
echo ---
wc -l
