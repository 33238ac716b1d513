# set -e: a pipeline fails only by its last command; then a failing pipeline ends the script.
# status: 1
set -e
false | true
echo "survived false | true"
cat data/words.txt | grep -q zebra
echo "found zebra"
cat data/words.txt | grep nosuchword | wc -l
echo "wc ends the pipeline"
cat data/words.txt | grep nosuchword
echo "not reached"
