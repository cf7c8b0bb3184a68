#!/bin/bash
# A common shape: the reference answer is computed into a scratch file, then compared
# with the agent's. 1 when they are the same, 0 otherwise.
expected=/tmp/tally.expected
tr -s ' ' '\n' < /data/words.txt | grep -v '^$' | LC_ALL=C sort | uniq -c \
  | awk '{ print $2, $1 }' > "$expected"
if cmp -s "$expected" /app/tally.txt; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
