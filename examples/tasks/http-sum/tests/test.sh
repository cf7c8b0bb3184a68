#!/bin/bash
# Queries the agent's server and compares its sums with a reference adder the test starts
# itself and asks by name (localhost:9090, resolved through /etc/hosts); always writes the
# reward (1 only when every answer is right).
out=$(mktemp -d)
python3 /tests/reference.py > "$out/reference" 2>&1 &
reference_pid=$!
for _ in $(seq 1 100); do
  grep -qx ready "$out/reference" && break
  kill -0 "$reference_pid" 2>/dev/null || break
  sleep 0.05
done
expected() {
  python3 -c 'import sys, urllib.request
print(urllib.request.urlopen(sys.argv[1], timeout=3).read().decode(), end="")' \
    "http://localhost:9090$1"
}
ok=0
check() {
  local body
  body=$(curl -fsS --max-time 3 "http://127.0.0.1:8080$1") && [ "$body" = "$2" ] && ok=$((ok + 1))
  return 0
}
if grep -qx ready "$out/reference"; then
  check "/health" "ok"
  for query in "a=2&b=3" "a=-7&b=10" "a=123456789&b=987654321"; do
    want=$(expected "/sum?$query") && check "/sum?$query" "$want"
  done
else
  echo "the reference adder did not start: $(head -c 300 "$out/reference")"
fi
kill "$reference_pid" 2>/dev/null
if [ "$ok" -eq 4 ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
[ "$ok" -eq 4 ]
