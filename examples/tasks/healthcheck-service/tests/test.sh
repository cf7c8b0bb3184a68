#!/bin/bash
# 1 when the answer is the service's token line, 0 otherwise.
if [ "$(cat /app/answer.txt 2>/dev/null)" = "service-generation 1" ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
