#!/bin/bash
set -euo pipefail
cp /var/lib/svc/token /app/answer.txt
