#!/bin/bash
set -euo pipefail
echo "threshold=50" > /app/settings.ini
