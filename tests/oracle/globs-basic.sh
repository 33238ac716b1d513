# Globs over the data directory: *, ?, [..], hidden files, names with spaces.
# status: 0
echo data/*.txt
echo data/????.txt
echo data/[nw]*
echo data/sub/*
echo data/sub/.*
for f in data/*' '*; do echo "item: $f"; done
printf '<%s>\n' data/dir*/*
