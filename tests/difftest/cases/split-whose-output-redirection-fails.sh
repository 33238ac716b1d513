# Found by the differential tester (seed 20271152, minimized): a split whose output file's
# directory is missing starts none of its copies, as bash does not start the command; --stats
# said they ran at the client, where --explain had placed them at their mounts.
# seed: 20271152
# mode: mounted
# differed: plan
cat data/sub/nested.txt data/utf8.txt |
  tr a-z A-Z > missing-dir/out14.txt
