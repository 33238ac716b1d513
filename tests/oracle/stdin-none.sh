# With stdin from /dev/null, readers see end of file at once.
# status: 1
cat | wc -c
read -r line
echo "read status: $?"
sort | head -n 1
read -r line
