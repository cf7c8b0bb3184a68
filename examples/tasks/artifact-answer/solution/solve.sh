#!/bin/bash
set -euo pipefail
awk '{ s += $1 } END { print s }' /app/numbers.txt > /logs/artifacts/answer.txt
mkdir -p /var/log/summer
echo done > /var/log/summer/run.log
