# Word splitting with the default IFS, a custom IFS, and empty fields.
# status: 0
x="  alpha   beta	gamma  "
printf '<%s>\n' $x
printf '<%s>\n' "$x"
IFS=:
y="a:b::c:"
printf '[%s]\n' $y
IFS=', '
z="one, two,,three"
printf '{%s}\n' $z
unset IFS
read -r a b rest <<< "  first second third fourth  "
printf '%s|%s|%s\n' "$a" "$b" "$rest"
IFS=, read -r c1 c2 c3 < data/people.csv
echo "$c3 $c2 $c1"
