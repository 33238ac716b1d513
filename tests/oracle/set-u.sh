# set -u: an unset variable is an error that ends the script.
# status: 1
set -u
x=set
echo "$x ${unset_var:-default} ${unset_var-}"
arr=()
echo "empty array: ${#arr[@]}"
echo "$unset_var"
echo "not reached"
