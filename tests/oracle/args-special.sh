# $0, $#, "$@" and $* with arguments holding spaces, empty strings and options.
# args: a 'b c' -h --version '' '*' --
# status: 0
echo "0=$0"
echo "#=$#"
printf '<%s>\n' "$@"
printf '[%s]\n' $*
printf '{%s}\n' "$*"
echo "first=$1 second=$2 third=$3"
shift 2
echo "after shift: $# $1"
set -- x "y z"
printf '(%s)\n' "$@"
echo "${10:-no tenth}"
