# yes | head: head ends early and SIGPIPE ends yes (status 141).
# status: 0
yes | head -n 3
echo "${PIPESTATUS[@]}"
yes posh | head -c 10; echo
seq 1 1000000 | head -n 2
echo "${PIPESTATUS[@]}"
yes | sed 's/y/n/' | head -n 2
cat /dev/zero | head -c 5 | od -An -tx1
