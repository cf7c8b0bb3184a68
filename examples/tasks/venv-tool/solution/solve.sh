#!/bin/bash
set -euo pipefail
python3 -m venv /app/.venv
/app/.venv/bin/pip install --no-index --quiet /opt/packages/wordcount-1.0-py3-none-any.whl
