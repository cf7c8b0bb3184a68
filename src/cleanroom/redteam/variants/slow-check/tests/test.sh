#!/bin/bash
# Always writes a reward (the fraction of checks passed); exits non-zero unless all pass.
# A slow start (a service warming up, a large fixture): over half the limit.
sleep 3
exec python3 /tests/check_summary.py /app/out/summary.csv /logs/verifier/reward.txt
