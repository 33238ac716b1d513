# A working directory removed while the script is in it: bash still runs commands there (the
# names they look up relative to it are gone), and so does the runtime.
# status: 0
mkdir gone
cd gone
rmdir ../gone
ls
echo "ls: $?"
cat ../data/words.txt | wc -l
cd ..
cat data/words.txt | wc -l
