#!/bin/bash
# Done when the total is committed and right: the tree reads clean (`git status`, run
# first, as a check of committed work runs), total.txt is tracked, and it holds the sum.
cd /app
reward=0
if [ -z "$(git status --porcelain 2>&1)" ] \
  && git ls-files --error-unmatch total.txt >/dev/null 2>&1 \
  && [ "$(cat total.txt 2>/dev/null)" = "$(cat /tests/expected.txt)" ]; then
  reward=1
fi
echo "$reward" > /logs/verifier/reward.txt
