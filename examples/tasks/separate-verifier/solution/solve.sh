#!/bin/bash
set -euo pipefail
sort /app/words.txt > /app/result.txt
