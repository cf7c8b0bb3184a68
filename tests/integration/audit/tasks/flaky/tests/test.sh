#!/bin/bash
# Planted: passes a correct answer only half of the time, by a coin from the kernel.
coin=$(( $(od -An -N1 -tu1 /dev/urandom) % 2 ))
if [ "$(cat /app/answer.txt 2>/dev/null)" = "42" ] && [ "$coin" = 1 ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
