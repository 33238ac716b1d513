# The whole environment a command sees (posh must add nothing a script can observe).
# status: 0
env | sort
echo "SHLVL=$SHLVL"
