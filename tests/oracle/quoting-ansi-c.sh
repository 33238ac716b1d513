# $'...' strings: escapes, octal, hex, unicode, embedded quotes.
# status: 0
printf '%s\n' $'tab\there' $'nl\nthere' $'quote\'s' $'back\\slash'
printf '%s' $'\x41\102\u00e9\e[0m\a' | od -An -c
echo $'a\x00b' | od -An -c
x=$'line1\nline2'
echo "$x" | wc -l
printf '%q\n' "$x" 'it'\''s' 'a b' ''
