# Not an item of issue 36: a here-document piped into a pipeline writing into the mount: tail gets -n without 2 (minimized, lines put back).
# seed: 57
# mode: mounted
# differed: stdout, files
cat <<EOF | tail -n 2 >> data/log.txt
a line
c 3
EOF
echo "status $?"
