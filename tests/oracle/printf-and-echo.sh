# printf formats and echo options.
# status: 0
echo -n "no newline"; echo
echo -e "a\tb\nc"
echo -E "a\tb"
printf '%s-%s\n' a b c d e
printf '%c%c\n' hello world
printf '%b\n' 'esc\x41' 'tab\tend'
printf '%d%%\n' 50
printf 'plain\n' > /dev/stdout
printf '%s\n' "$(printf 'x%.0s' {1..5})"
echo {a,b}{1,2} {1..3} {c..a}
