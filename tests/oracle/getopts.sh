# getopts on the script's own options (-h, -v VALUE) and the remaining arguments.
# args: -h -v 'two words' -x rest1 'rest 2'
# status: 0
while getopts ":hv:" opt; do
  case $opt in
    h) echo "help flag" ;;
    v) echo "value: $OPTARG" ;;
    \?) echo "unknown: -$OPTARG" ;;
  esac
done
shift $((OPTIND - 1))
printf 'rest: <%s>\n' "$@"
