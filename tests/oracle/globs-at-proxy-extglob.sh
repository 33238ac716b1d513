# Extended globs over a mount (issue 40): `bash -n` refuses `@(...)` before `shopt -s extglob`
# has run, so posh-exec hands nothing of such a script over, and bash globs them all.
# status: 0
mkdir -p data/sub/ext
touch data/sub/ext/a.txt data/sub/ext/b.txt data/sub/ext/c.log
shopt -s extglob
stat -c '[%n]' data/sub/ext/@(a|b).* | cat
stat -c '[%n]' data/sub/ext/!(*.txt) | cat
