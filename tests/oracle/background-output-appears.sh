# A background job's new output file exists as the job starts, as bash creates it: a script can
# find it (or remove it) before the job ends.
# status: 0
# handed: 4
mkfifo data/gate
cat data/gate | sort > data/bg-out.txt &
job=$!
while [ ! -e data/bg-out.txt ]; do sleep 0.05; done
echo "exists while the job runs"
echo "c b a" | tr ' ' '\n' > data/gate
wait "$job"
cat data/bg-out.txt
rm data/gate
