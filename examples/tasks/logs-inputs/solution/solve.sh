#!/bin/bash
set -euo pipefail
awk '$1 > 50' /logs/inputs/readings.txt | wc -l > /app/count.txt
