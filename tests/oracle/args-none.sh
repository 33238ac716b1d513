# No arguments at all: $# is 0 and "$@" expands to nothing.
# status: 0
echo "#=$#"
printf '<%s>\n' "$@"
echo "[${1-unset}] [${1:-empty}]"
set -u
echo "${1-default}"
