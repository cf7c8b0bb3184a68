#!/bin/bash
# Reads the tail the engine published (test.sh never writes it) and grades it.
set -e
python3 - <<'PY'
import json

with open("/work/events.tail.json") as fh:
    tail = json.load(fh)
levels = [e["level"] for e in tail["events"]]
assert levels == ["error", "error", "error"], levels
PY
echo 1 > /logs/verifier/reward.txt
