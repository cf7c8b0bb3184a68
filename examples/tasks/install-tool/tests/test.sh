#!/bin/bash
# The package must be installed (dpkg says so) and greet must print the configured text.
status=$(dpkg-query -W -f='${Status}' greet 2>/dev/null)
out=$(greet 2>/dev/null)
if [ "$status" = "install ok installed" ] && [ "$out" = "bonjour, cleanroom" ]; then
  echo 1
else
  echo 0
fi > /logs/verifier/reward.txt
