# GLOBIGNORE over a mount (issue 40): setting it turns dotglob on, which `$BASHOPTS` does not
# show, so a script that sets it keeps its globs with bash.
# status: 0
mkdir -p data/sub/ign
touch data/sub/ign/.dot.txt data/sub/ign/a.txt data/sub/ign/b.txt data/sub/ign/_c.txt data/sub/ign/a.log
GLOBIGNORE='*/a.*:*/_*'
stat -c '[%n]' data/sub/ign/*.* | cat
GLOBIGNORE='*'
stat -c '[%n]' data/sub/ign/*.txt 2>&1 | cat
unset GLOBIGNORE
stat -c '[%n]' data/sub/ign/*.txt | cat
