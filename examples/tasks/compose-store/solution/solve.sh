#!/bin/bash
set -euo pipefail
total=$(awk '{ sum += $2 } END { print sum }' /data/orders.txt)
curl -fsS -X PUT --data "$total" http://store:8080/kv/total
