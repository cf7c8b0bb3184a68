#!/bin/bash
# Queries the agent's server; always writes the reward (1 only when every answer is right).
ok=0
check() {
  local body
  body=$(curl -fsS --max-time 3 "http://127.0.0.1:8080$1") && [ "$body" = "$2" ] && ok=$((ok + 1))
  return 0
}
check "/health" "ok"
check "/sum?a=2&b=3" '{"sum": 5}'
check "/sum?a=-7&b=10" '{"sum": 3}'
if [ "$ok" -eq 3 ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
[ "$ok" -eq 3 ]
