# A script bash rejects (a `[[ ]]` test broken over two lines, which posh's parser reads) is
# not rewritten: bash runs the original and reports its own error, with its own message, line
# and status (bash 5.2 stops there with status 0), after the lines before it ran.
# status: 0
sort data/words.txt | uniq -c | sort -rn | head -n 3
echo before
[[ a
]]
echo never
