#!/bin/bash
# {"reward": 1 followed by 400 zeros}: valid JSON whose number overflows a float.
python3 -c 'import sys; sys.stdout.write("{\"reward\": 1" + "0" * 400 + "}")' > /logs/verifier/reward.json
