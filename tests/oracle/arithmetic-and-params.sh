# Arithmetic expansion and parameter expansion operators.
# status: 0
i=7
echo $((i * 6)) $((i / 2)) $((i % 4)) $((2 ** 10)) $((i > 3 ? 1 : 0))
((i++)); echo "$i"
path=data/sub/nested.txt
echo "${path##*/} ${path%/*} ${path#*/} ${path%%/*}"
echo "${path/nested/other} ${path//s/S} ${path^^} ${#path}"
v=""
echo "${v:-dflt} ${v:=assigned} $v ${v:+alt}"
echo "${undefined_var:-$(echo from-sub)}"
printf '%05d|%-6s|%x|%.2f\n' 42 ab 255 3.14159
