# Found by the differential tester (seed 9054, cut by hand): a here-document piped into a command
# at the proxy whose `&>` (or `2> f > g`) names a file on the mount: the command reads no input
# (the file is empty), where bash writes the line. Only where the builtin hands the pipeline over
# (as a file or under `-c`); through a `posh-run` process it was right. Fixed; here the cost
# model now keeps the pipeline at the client, and posh-exec's distributed test
# `a_here_document_reaches_a_proxy_command_that_writes_both_streams_to_a_file` runs it at a proxy.
# seed: 9054
# mode: mounted
# differed: files
cat <<EOF | head -n 3 &> data/both.txt
apple
EOF
cat data/both.txt
