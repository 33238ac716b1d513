# Issue 36 item 7: the runtime refuses a removed working directory (minimized).
# seed: 203
# mode: mounted
# differed: stdout, stderr
mkdir gone23; cd gone23; rmdir ../gone23; ls; cat ../data/words.txt | wc -l; echo "status $?"; cd ..
