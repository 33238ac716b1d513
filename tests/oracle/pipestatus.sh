# PIPESTATUS after pipelines of 1 to 4 commands with mixed exit statuses.
# status: 0
true; echo "${PIPESTATUS[@]}"
false | true; echo "${PIPESTATUS[@]}"
true | (exit 2); echo "${PIPESTATUS[@]}"
(exit 1) | (exit 0) | (exit 5); echo "${PIPESTATUS[@]}"
cat data/words.txt | grep -c apple | { cat > /dev/null; exit 7; } | sort; echo "${PIPESTATUS[@]}"
cat data/missing.txt | sort | uniq -c | wc -l; s=("${PIPESTATUS[@]}"); echo "${#s[@]}: ${s[*]}"
grep zebra data/words.txt | tr a-z A-Z; echo "last: ${PIPESTATUS[1]} first: ${PIPESTATUS[0]}"
! false | true; echo "negated: $? ${PIPESTATUS[*]}"
