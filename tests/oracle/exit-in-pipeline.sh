# exit inside a pipeline stage only ends that stage.
# status: 0
echo one | { read -r x; echo "got $x"; exit 3; } | cat
echo "${PIPESTATUS[@]}"
f() { exit 9; }
f | true
echo "after f | true: ${PIPESTATUS[0]}"
echo end
