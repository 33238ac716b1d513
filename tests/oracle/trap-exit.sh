# An EXIT trap runs at the end and sees the exit status; it may print and write files.
# status: 4
cleanup() { echo "cleanup with status $?"; echo done > trap-ran.txt; }
trap cleanup EXIT
echo working
sort data/words.txt | head -n 2
exit 4
