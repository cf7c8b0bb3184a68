#!/bin/bash
set -euo pipefail
echo "$GREETING $SUFFIX" > "$ANSWER_FILE"
