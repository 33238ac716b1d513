# A script reading its stdin: read, then the rest through a pipeline.
# stdin: data/words.txt
# status: 0
read -r first
echo "first: $first"
read -r second
echo "second: $second"
sort | uniq -c | sort -k1,1nr -k2 | head -n 3
