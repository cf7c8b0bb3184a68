"""The OSWorld checker page says what the code decides: how many metrics are cleanroom's,
how many are called from desktop-env, and which are refused and why."""

from __future__ import annotations

import re
from pathlib import Path

from cleanroom.verifiers.osworld.metrics import METRICS
from cleanroom.verifiers.osworld.own_metrics import OWN_METRICS, REFUSED

PAGE = Path(__file__).parents[3] / "docs" / "verifiers" / "osworld.md"


def _section() -> str:
    text = PAGE.read_text()
    start = text.index("## Metrics called from desktop-env")
    return text[start : text.index("\n## ", start + 1)]


def test_the_page_counts_the_metrics_as_the_registries_hold_them() -> None:
    section = _section()
    assert f"re-implements {len(METRICS)} metrics" in section
    named = re.search(r"\(`own_metrics.OWN_METRICS`: (.*?) and (\d+) more\)", section, re.S)
    assert named is not None
    listed = re.findall(r"`(\w+)`", named.group(1))
    assert all(name in OWN_METRICS for name in listed)
    assert len(listed) + int(named.group(2)) == len(OWN_METRICS)


def test_the_refused_table_is_the_refused_registry() -> None:
    rows = re.findall(r"^\| `(\w+)` \| (.+?) \|$", _section(), re.M)
    assert dict(rows) == REFUSED
