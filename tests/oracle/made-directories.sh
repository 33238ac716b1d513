# Directories made by mkdir before the pipelines that write into them (at a proxy when they
# lie on its mount), mkdir's error for one that exists, and mawk, gawk and col as commands of
# their own.
# status: 0
# handed: 10
# handed-mounted: 7
mkdir -p data/made/deeper
sort data/words.txt > data/made/deeper/sorted.txt
mkdir data/made/deeper
echo "status $?"
mkdir data/second data/sub/third
mawk -F, '{ print $1 }' data/people.csv | head -n 3 > data/second/first.txt
gawk -F, 'NR > 1 { n++ } END { print n }' data/people.csv > data/sub/third/count.txt
tr 'e' '\b' < data/words.txt | col -b | sort | head -n 4
ls data/made data/made/deeper data/second data/sub/third
cat data/second/first.txt
cat data/sub/third/count.txt
