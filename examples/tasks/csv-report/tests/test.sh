#!/bin/bash
# Always writes a reward (the fraction of checks passed); exits non-zero unless all pass.
exec python3 /tests/check_summary.py /app/out/summary.csv /logs/verifier/reward.txt
