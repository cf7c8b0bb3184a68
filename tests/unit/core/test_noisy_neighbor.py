"""noisy_neighbor's rows: a hog held past its limits, or a harmed bystander, is cross; a
hog that never said what it held is lost, never clean. And the hog itself, for real,
with small numbers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cleanroom.core.detectors import Bystander, HogBounds, HogReport, noisy_neighbor_rows
from cleanroom.core.isolation import RowResult
from cleanroom.isolation.checks.noisy_neighbor import HOG_SOURCE

BOUNDS = HogBounds(memory_mib=3072, tasks=4096, tmp_mib=512, home_mib=1024)
WITHIN = HogReport(memory_mib=2900, tasks=3900, tmp_mib=511, home_mib=1024)
LOOKED = (150.0, 300.0)  # the canary's looks, timed meanwhile


def _bystander(
    env: str, *, latencies: tuple[float, ...] = (120.0, 140.0), **changes: object
) -> Bystander:
    fields: dict[str, object] = {
        "env": env,
        "pids_before": (1, 2),
        "pids_after": (1, 2),
        "dead_after": (),
        "generation_before": 3,
        "generation_after": 3,
        "latencies_ms": latencies,
    }
    fields.update(changes)
    return Bystander(**fields)  # type: ignore[arg-type]


def _rows(hog: HogReport, *bystanders: Bystander) -> dict[str, tuple[RowResult, str]]:
    rows = noisy_neighbor_rows(
        "noisy_neighbor", 0, 1, "env01", hog, BOUNDS, bystanders, 5000.0, 2000.0, "env00"
    )
    assert all(r.from_env == "env01" for r in rows)
    return {r.to_env: (r.result, r.detail) for r in rows}


def test_a_hog_held_to_its_limits_with_untouched_bystanders_is_clean() -> None:
    rows = _rows(WITHIN, _bystander("env00", looks_ms=LOOKED), _bystander("env02"))
    assert {result for result, _ in rows.values()} == {RowResult.CLEAN}


@pytest.mark.parametrize(
    ("held", "named"),
    [
        (HogReport(memory_mib=3328, tasks=3900, tmp_mib=511, home_mib=0), "memory 3328 MiB"),
        (HogReport(memory_mib=2900, tasks=4160, tmp_mib=511, home_mib=0), "tasks 4160 > 4096"),
        (HogReport(memory_mib=2900, tasks=3900, tmp_mib=768, home_mib=0), "/tmp 768 MiB"),
        (
            HogReport(memory_mib=2900, tasks=3900, tmp_mib=511, home_mib=1280),
            "home 1280 MiB > 1024 MiB",
        ),
    ],
)
def test_a_hog_past_any_limit_crosses_to_every_bystander(held: HogReport, named: str) -> None:
    rows = _rows(held, _bystander("env00", looks_ms=LOOKED), _bystander("env02"))
    assert all(result is RowResult.CROSS and named in why for result, why in rows.values())


def test_a_slow_or_broken_bystander_is_cross_though_the_hog_kept_its_limits() -> None:
    rows = _rows(
        WITHIN,
        _bystander("env00", latencies=(150.0, 6200.0), looks_ms=LOOKED),
        _bystander("env02", dead_after=("writer (pid 9) is dead",)),
        _bystander("env03", failed_screenshots=1),
        _bystander("env04"),
    )
    assert rows["env00"][0] is RowResult.CROSS and "over 5000 ms" in rows["env00"][1]
    assert rows["env02"][0] is RowResult.CROSS and rows["env03"][0] is RowResult.CROSS
    assert rows["env04"][0] is RowResult.CLEAN


def test_a_canary_look_that_failed_or_was_slow_is_cross_and_one_never_looked_at_is_lost() -> None:
    rows = _rows(WITHIN, _bystander("env00", looks_ms=(150.0, 4300.0)))
    assert rows["env00"][0] is RowResult.CROSS and "canary look(s) over 2000 ms" in rows["env00"][1]
    rows = _rows(WITHIN, _bystander("env00", looks_ms=LOOKED, failed_looks=1))
    assert rows["env00"][0] is RowResult.CROSS and "1 canary look(s) failed" in rows["env00"][1]
    rows = _rows(WITHIN, _bystander("env00"))  # screenshots, but no look was ever taken
    assert rows["env00"][0] is RowResult.LOST
    # Another environment has no watcher: its rows never ask for looks.
    rows = _rows(WITHIN, _bystander("env02", looks_ms=(9000.0,)))
    assert rows["env02"][0] is RowResult.CLEAN


def test_a_hog_that_never_said_what_it_held_or_a_bystander_never_timed_is_lost() -> None:
    rows = _rows(HogReport(error="no answer"), _bystander("env02"))
    assert rows["env02"][0] is RowResult.LOST
    rows = _rows(WITHIN, _bystander("env02", latencies=()))
    assert rows["env02"][0] is RowResult.LOST


@pytest.mark.parametrize(
    "said",
    [
        {},
        {"memory_mib": "lots", "tasks": 1, "tmp_mib": 1, "home_mib": 1},
        {"memory_mib": True, "tasks": 1, "tmp_mib": 1, "home_mib": 1},
        {"memory_mib": 1, "tasks": 1, "tmp_mib": 1},
    ],
)
def test_a_junk_report_is_an_error_not_a_number(said: dict[str, object]) -> None:
    assert HogReport.from_probe(said).error is not None


def test_the_hog_takes_what_it_is_asked_for_and_gives_it_back(tmp_path: Path) -> None:
    (tmp_path / "tmp").mkdir()
    (tmp_path / "home").mkdir()
    cfg = {
        "cpu_procs": 1,
        "memory_mib": 48,
        "tasks": 20,
        "tmp_mib": 3,
        "tmp": str(tmp_path / "tmp"),
        "home_mib": 2,
        "home": str(tmp_path / "home"),
        "hold_s": 0.2,
    }
    done = subprocess.run(
        [sys.executable, "-I", "-c", HOG_SOURCE.read_text(), json.dumps(cfg)],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    report = HogReport.from_probe(json.loads(done.stdout.strip().splitlines()[-1]))
    assert (report.memory_mib, report.tasks, report.tmp_mib, report.home_mib) == (48, 20, 3, 2)
    # the files are gone again
    assert list((tmp_path / "tmp").iterdir()) == list((tmp_path / "home").iterdir()) == []
