# Single and double quotes, backslashes inside and outside them.
# status: 0
name='world'
echo 'single: $name "kept" \n'
echo "double: $name 'kept' \$name \"q\" \\ \`"
echo unquoted\ space\ \$name\\end
printf '%s\n' "a  b" 'c  d' e\ \ f
echo "$name"'s' "${name}s" "${name:0:3}"
echo ''"" '' "" | od -c
