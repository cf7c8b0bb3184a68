#!/bin/bash
# A reward.json nested 30,000 deep: a recursive JSON parser raises instead of refusing.
python3 -c 'import sys; sys.stdout.write("[" * 30000 + "]" * 30000)' > /logs/verifier/reward.json
