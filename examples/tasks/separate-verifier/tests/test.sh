#!/bin/bash
# 1 when the agent's result, carried here as an artifact, is the sorted list.
if [ -x /usr/local/bin/grade ] && /usr/local/bin/grade /app/result.txt; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
