#!/bin/bash
# Planted: the solution writes the wrong answer.
echo 41 > /app/answer.txt
