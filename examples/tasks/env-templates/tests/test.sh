#!/bin/bash
# 1 when the answer is the text the verifier's environment expects, 0 otherwise.
if [ -n "$EXPECTED" ] && [ "$(cat /app/answer.txt 2>/dev/null)" = "$EXPECTED" ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
