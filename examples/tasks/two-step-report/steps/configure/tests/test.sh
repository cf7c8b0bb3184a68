#!/bin/bash
# Step 1: the setting is there, exactly.
if [ "$(cat /app/settings.ini 2>/dev/null)" = "threshold=50" ]; then
    echo 1 > /logs/verifier/reward.txt
else
    echo 0 > /logs/verifier/reward.txt
fi
