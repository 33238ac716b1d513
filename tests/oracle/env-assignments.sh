# VAR=x cmd reaches the command's environment only; export reaches later commands.
# status: 0
FOO=bar env | grep '^FOO='
env | grep -c '^FOO=' || true
export EXPORTED=yes
env | grep '^EXPORTED='
NOT_EXPORTED=no
env | grep -c '^NOT_EXPORTED=' || true
A=1 B="two words" sh -c 'echo "$A|$B"'
GREETING=hi bash -c 'echo "$GREETING"' | tr a-z A-Z
f() { echo "in f: ${LOCAL_VAR:-unset}"; }
LOCAL_VAR=set f
echo "after f: ${LOCAL_VAR:-unset}"
LC_ALL=C.UTF-8 env | grep '^LC_ALL='
