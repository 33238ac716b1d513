#!/usr/bin/env bash
# The ten most frequent words of the example corpus (McIlroy's pipeline). From the repository
# root: posh-exec --config examples/posh.toml --explain examples/top-words.sh
set -euo pipefail
cat examples/data/*.txt | tr -cs 'A-Za-z' '\n' | tr 'A-Z' 'a-z' | sort | uniq -c | sort -rn | head -n 10
