# Pipelines handed over from a shell whose stdin or stderr is closed: the trampoline's own
# socket must not take the free descriptor (it would be handed over as the command's stream).
# A closed stdout is not here: the runtime gives a command /dev/null for a closed descriptor.
# status: 0
(
  exec <&-
  grep -c a data/words.txt
  cat data/words.txt | wc -l
  sed 's/^/x /' data/numbers.txt | head -n 2
)
(
  exec 2>&-
  grep -c a data/words.txt data/missing
  echo "grep with a closed stderr: $?"
  sort data/numbers.txt | tail -n 1
)
