#!/bin/bash
# Start the engine detached (it outlives this step) and wait for its first tail.
set -e
mkdir -p /work
setsid nohup python3 /opt/engine/engine.py >/work/engine.log 2>&1 < /dev/null &
for _ in $(seq 1 200); do
  [ -s /work/events.tail.json ] && exit 0
  sleep 0.05
done
echo "engine published nothing" >&2
exit 1
