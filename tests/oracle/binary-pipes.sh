# Binary bytes (NUL, 0xff, escapes) through pipes and into files, unchanged.
# status: 0
head -c 48 data/blob.bin | od -An -tx1
tail -c 16 data/blob.bin | od -An -c
cat data/blob.bin | tr -d '\000' | wc -c
cat data/blob.bin > copy.bin
cmp data/blob.bin copy.bin && echo identical
cat data/blob.bin | cut -b1-4 | od -An -tx1 | head -n 2
cat data/blob.bin | sort | md5sum
head -c 100 data/blob.bin
