"""Grade /app/out/summary.csv: three checks, the reward is the fraction passed."""

import csv
import sys
from collections import defaultdict
from decimal import Decimal

summary_path, reward_path = sys.argv[1], sys.argv[2]

totals: dict[str, Decimal] = defaultdict(Decimal)
with open("/data/sales.csv", newline="") as fh:
    for row in csv.DictReader(fh):
        totals[row["region"]] += Decimal(row["amount"])
expected = ["region,total"] + [f"{r},{totals[r]:.2f}" for r in sorted(totals)]

try:
    with open(summary_path, "rb") as fh:
        raw = fh.read()
    lines = raw.decode("utf-8").splitlines()
    checks = [
        lines[:1] == expected[:1],
        lines == expected,
        b"\r" not in raw and raw.endswith(b"\n"),
    ]
except (OSError, UnicodeDecodeError):
    checks = [False, False, False]

passed = sum(checks)
with open(reward_path, "w") as out:
    out.write(f"{passed / len(checks):.4f}\n")
sys.exit(0 if passed == len(checks) else 1)
