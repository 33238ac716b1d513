# The file-system commands scripts run around their pipelines, at the proxy when their files lie
# on its mount: rm, rmdir, touch, chmod, mkfifo, ln and mv, with their messages and statuses as
# bash's (a missing file, a directory with entries, which stays at the client).
# status: 0
# handed: 20
mkdir -p data/work/empty
sort data/words.txt > data/work/sorted.txt
cp data/numbers.txt data/work/numbers.txt
touch data/work/stamp.txt data/work/numbers.txt
chmod 640 data/work/sorted.txt
ln -f data/work/sorted.txt data/work/hard.txt
ln -sf sorted.txt data/work/soft.txt
head -n 2 data/work/soft.txt
rm data/work/numbers.txt
rm data/work/missing.txt
echo "rm: $?"
rm -f data/work/missing.txt
echo "rm -f: $?"
rmdir data/work/empty
rmdir data/sub
echo "rmdir of a directory with entries: $?"
mkfifo -m 600 data/work/pipe
stat -c '%a %h %F %n' data/work/sorted.txt data/work/hard.txt data/work/pipe data/work/stamp.txt
rm data/work/hard.txt data/work/soft.txt data/work/pipe
mkdir data/work/into
mv data/work/stamp.txt data/work/moved.txt
mv -v data/work/moved.txt data/work/into
mv data/work/missing.txt data/work/gone.txt
echo "mv: $?"
ls -A data/work data/work/into
