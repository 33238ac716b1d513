# Issue 36 item 4: the rewrite's variables show in compgen -v (cut by hand).
# seed: 49
# mode: mounted
# differed: stdout
sort data/words.txt > /dev/null
compgen -v | grep -c posh
