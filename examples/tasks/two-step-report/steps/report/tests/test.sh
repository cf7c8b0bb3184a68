#!/bin/bash
# Step 2: the count, and the setting step 1 left (the state carried from step to step).
# 75, 51, 98 and 64 are above 50.
if [ "$(cat /app/settings.ini 2>/dev/null)" = "threshold=50" ] \
    && [ "$(cat /app/count.txt 2>/dev/null)" = "4" ]; then
    echo 1 > /logs/verifier/reward.txt
else
    echo 0 > /logs/verifier/reward.txt
fi
