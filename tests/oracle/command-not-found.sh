# Commands that do not exist: status 127, bash's message, and 126 for a non-executable.
# status: 127
nosuchcommand-posh arg
echo "status: $?"
nosuchcommand-posh | sort
echo "pipeline: ${PIPESTATUS[*]}"
echo hi | nosuchcommand-posh
echo "last: $?"
./data/words.txt
echo "not executable: $?"
"data/file with spaces.txt"
echo "spaces: $?"
nosuchcommand-posh
