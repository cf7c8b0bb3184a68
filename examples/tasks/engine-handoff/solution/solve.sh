#!/bin/bash
set -euo pipefail
printf 'error\n' > /app/filter.txt
