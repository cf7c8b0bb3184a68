#!/bin/bash
# Does not solve the task: a link in the work dir to the image's /tmp, which exists, and
# the answer a link through it to the scratch file where test.sh writes its reference.
ln -s /tmp /app/scratch
ln -s scratch/tally.expected /app/tally.txt
