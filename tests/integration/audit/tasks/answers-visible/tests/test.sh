#!/bin/bash
# Passes when the report matches the expected one.
if cmp -s /app/report.txt /tests/expected-report.txt; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
