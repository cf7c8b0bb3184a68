#!/bin/bash
# A reward whose first line is a perfect score, followed by a gigabyte (sparse) of zeros:
# a reader that reads it all runs out of memory, one that reads a line is fooled.
printf '1\n' > /logs/verifier/reward.txt
truncate -s 1G /logs/verifier/reward.txt
