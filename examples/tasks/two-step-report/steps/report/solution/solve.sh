#!/bin/bash
set -euo pipefail
threshold=$(sed -n 's/^threshold=//p' /app/settings.ini)
awk -v t="$threshold" '$1 > t { n++ } END { print n + 0 }' /app/readings.txt > /app/count.txt
