# Indexed and associative arrays, slices, lengths, mapfile.
# status: 0
arr=(zero "one two" three)
arr+=(four)
echo "${#arr[@]} ${arr[1]} ${arr[-1]}"
printf '<%s>\n' "${arr[@]:1:2}"
printf '<%s>\n' "${arr[*]}"
unset 'arr[2]'
echo "${!arr[@]}"
declare -A color=([apple]=red [banana]=yellow [kiwi]=green)
for k in "${!color[@]}"; do echo "$k=${color[$k]}"; done | sort
mapfile -t lines < data/words.txt
echo "${#lines[@]} ${lines[0]} ${lines[14]}"
printf '%s\n' "${lines[@]}" | sort -u | head -n 4
