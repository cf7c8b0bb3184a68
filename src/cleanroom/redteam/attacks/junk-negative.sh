#!/bin/bash
# A reward below the [0, 1] range: -1.
printf -- '-1\n' > /logs/verifier/reward.txt
