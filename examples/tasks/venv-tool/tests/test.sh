#!/bin/bash
# The venv's wordcount must count the words, the venv must be the one at /app/.venv, and
# the system's Python must not have the package.
words=$(/app/.venv/bin/wordcount /data/words.txt 2>/dev/null)
prefix=$(/app/.venv/bin/python -c 'import sys; print(sys.prefix)' 2>/dev/null)
if [ "$words" = 9 ] && [ "$prefix" = /app/.venv ] && ! python3 -c 'import wordcount' 2>/dev/null; then
  echo 1
else
  echo 0
fi > /logs/verifier/reward.txt
