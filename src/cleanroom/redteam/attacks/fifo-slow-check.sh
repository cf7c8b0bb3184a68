#!/bin/bash
# Does not solve the task: the output the check opens is a FIFO, so the check waits for
# a writer that never comes. The check takes over half its limit on any state, so a
# rule that blames the agent only when the untouched state's check is quick never fires.
mkdir -p /app/out
mkfifo /app/out/summary.csv
