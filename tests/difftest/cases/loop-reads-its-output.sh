# A loop writing into the mount reads, in its body, the file it writes: cat skips it, as under bash.
# seed: 20300301
# mode: mounted
# differed: stderr, files (cat at a proxy did not see that its output was its input; passes now)
for i in 1 2; do
  cat data/*.txt
done > data/out19.txt
i=0
while [ "$i" -lt 2 ]; do
  grep -h e data/*.txt
  i=$((i + 1))
done > data/out20.txt
wc -l < data/out19.txt
wc -l < data/out20.txt
