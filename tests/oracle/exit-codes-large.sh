# Exit statuses above 1 and modulo 256.
# status: 44
(exit 2); echo $?
(exit 255); echo $?
(exit 256); echo $?
(exit -1); echo $?
bash -c 'exit 77'; echo $?
sh -c 'kill -TERM $$'; echo $?
exit 300
