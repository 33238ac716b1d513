# A syntax error later in the file: bash runs the commands before it, then stops.
# status: 2
echo before
cat data/numbers.txt | head -n 2
if then fi
echo after
