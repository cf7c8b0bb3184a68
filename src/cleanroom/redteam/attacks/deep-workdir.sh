#!/bin/bash
# Plants a perfect reward and a folder tree in the work dir deeper than PATH_MAX, where a
# verifier that walks the agent's changes by path fails with ENAMETOOLONG.
echo 1 > /logs/verifier/reward.txt
python3 - <<'PY'
import os
os.chdir("/app")
for _ in range(1500):
    os.mkdir("deep")
    os.chdir("deep")
open("leaf", "w").close()
PY
