#!/bin/bash
set -euo pipefail
python3 - <<'PY'
import csv
from collections import defaultdict
from decimal import Decimal

totals = defaultdict(Decimal)
with open("/data/sales.csv", newline="") as fh:
    for row in csv.DictReader(fh):
        totals[row["region"]] += Decimal(row["amount"])
with open("/app/out/summary.csv", "w", newline="") as out:
    out.write("region,total\n")
    for region in sorted(totals):
        out.write(f"{region},{totals[region]:.2f}\n")
PY
