#!/bin/bash
# Does not solve the task: its answer artifact is a link to the verifier's expected
# answer, which test.sh compares it with (the link dangles until /tests arrives).
mkdir -p /var/log/summer
echo done > /var/log/summer/run.log
ln -s /tests/expected.txt /logs/artifacts/answer.txt
