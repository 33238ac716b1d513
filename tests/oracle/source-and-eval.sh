# eval, source of a file the script writes, and functions it defines.
# status: 0
cmd='cat data/words.txt | sort -u | head -n 2'
eval "$cmd"
cat > lib.sh <<'EOT'
greet() { echo "hello $1"; }
LIB_VAR=loaded
EOT
. ./lib.sh
greet posh | tr a-z A-Z
echo "$LIB_VAR"
declare -f greet
