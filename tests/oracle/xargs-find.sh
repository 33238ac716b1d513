# find and xargs over the data directory, including names with spaces (NUL separated).
# status: 0
find data -type f | sort
find data -name '*.txt' -print0 | sort -z | xargs -0 wc -c
find data -type f -name '*.csv' | xargs grep -c ,
printf '%s\n' 1 2 3 4 5 | xargs -n 2 echo
find data -empty -type f
