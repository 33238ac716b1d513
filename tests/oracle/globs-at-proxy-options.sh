# The shell's glob options hold for globs a proxy expands (issue 40): dotglob, globstar,
# nocaseglob, nullglob, failglob, set -f and the locale's order.
# status: 0
mkdir -p data/sub/opts/in/deep
touch data/sub/opts/.dot.txt data/sub/opts/a.txt data/sub/opts/B.txt data/sub/opts/b.txt
touch data/sub/opts/_c.txt data/sub/opts/a.log data/sub/opts/in/x.txt data/sub/opts/in/deep/y.txt
stat -c '[%n]' data/sub/opts/*.txt | cat
LC_ALL=C.UTF-8
stat -c '[%n]' data/sub/opts/*.txt | cat
LC_ALL=C
shopt -s dotglob
stat -c '[%n]' data/sub/opts/*.txt | cat
shopt -u dotglob
shopt -s globstar
stat -c '[%n]' data/sub/opts/**/*.txt | cat
shopt -u globstar
stat -c '[%n]' data/sub/opts/**/*.txt | cat
shopt -s nocaseglob
stat -c '[%n]' data/sub/opts/b* | cat
shopt -u nocaseglob
stat -c '[%n]' data/sub/opts/*.none /dev/null 2>&1 | cat
shopt -s nullglob
stat -c '[%n]' data/sub/opts/*.none /dev/null | cat
shopt -u nullglob
shopt -s failglob
stat -c '[%n]' data/sub/opts/*.none /dev/null | cat
echo "failglob: $?"
stat -c '[%n]' data/sub/opts/a.* data/sub/opts/*.none data/sub/opts/*.nothing | cat
shopt -u failglob
set -f
stat -c '[%n]' data/sub/opts/*.txt /dev/null 2>&1 | cat
set +f
stat -c '[%n]' data/sub/opts/*.txt | cat
