# Here-strings feed commands and read, with and without quotes.
# status: 0
tr a-z A-Z <<< "hello   world"
wc -c <<< ''
x="a b c"
read -r first rest <<< "$x"
echo "$first/$rest"
cut -d, -f2 <<< "$(head -n 3 data/people.csv)"
grep -c apple <<< "$(cat data/words.txt)"
