#!/bin/bash
# 1 when the answer the agent left in /logs/artifacts is the expected total and the
# declared artifact says the run is done, 0 otherwise.
answer="$(tr -d ' \n' < /logs/artifacts/answer.txt 2>/dev/null)"
expected="$(tr -d ' \n' < /tests/expected.txt)"
if [ -n "$answer" ] && [ "$answer" = "$expected" ] \
   && grep -qx done /var/log/summer/run.log 2>/dev/null; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
