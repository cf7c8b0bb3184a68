#!/bin/bash
# 1 when the count is right (three readings are above 50), 0 otherwise.
if [ "$(tr -d ' \n' < /app/count.txt 2>/dev/null)" = "3" ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
