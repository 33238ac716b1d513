#!/usr/bin/env bash
# The ten most frequent words of the files given (McIlroy's pipeline).
set -euo pipefail
cat "$@" | tr -cs 'A-Za-z' '\n' | tr 'A-Z' 'a-z' | sort | uniq -c | sort -rn | head -n 10
