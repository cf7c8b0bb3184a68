#!/bin/bash
set -euo pipefail
tr -s ' ' '\n' < /data/words.txt | grep -v '^$' | LC_ALL=C sort | uniq -c \
  | awk '{ print $2, $1 }' > /app/tally.txt
