#!/bin/bash
# 1 when the store holds the right total and was frozen after the agent phase.
total=$(curl -fsS --max-time 3 http://store:8080/kv/total)
frozen=$(curl -fsS --max-time 3 http://store:8080/frozen)
echo "total=${total:-missing} frozen=${frozen:-unknown}"
if [ "$total" = "157" ] && [ "$frozen" = "yes" ]; then echo 1; else echo 0; fi \
  > /logs/verifier/reward.txt
