#!/bin/bash
set -euo pipefail
cat > /app/stats.py <<'PY'
"""Small statistics helpers used by the nightly report."""


def mean(values):
    """The arithmetic mean of a non-empty sequence."""
    return sum(values) / len(values)


def median(values):
    """The middle value; the mean of the two middle values for an even count."""
    ordered = sorted(values)
    mid = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[mid]
    return (ordered[mid - 1] + ordered[mid]) / 2
PY
