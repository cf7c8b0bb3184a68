"""Isolation rows and windows: a lost row fails its window."""

from __future__ import annotations

import pytest

from cleanroom.core.isolation import (
    SWEEP_TEST,
    IsolationRow,
    RowResult,
    Window,
    judge_window,
    judge_windows,
    trials_per_test,
)


def row(result: str, window: int = 1, test: str = "clipboard", trial: int = 0) -> IsolationRow:
    return IsolationRow(test, trial, "env01", "env02", RowResult(result), window)


def test_a_window_of_clean_rows_passes() -> None:
    verdict = judge_window(1, [row("clean"), row("clean", trial=1)])
    assert not verdict.failed
    assert (verdict.rows, verdict.cross, verdict.lost) == (2, 0, 0)


def test_a_single_lost_row_fails_its_window_and_names_the_test() -> None:
    verdict = judge_window(1, [row("clean"), row("lost", test="dialog_steal")])
    assert verdict.failed
    assert verdict.lost == 1
    assert "dialog_steal" in (verdict.failure or "")


def test_a_lost_row_fails_only_its_own_window() -> None:
    verdicts = judge_windows([row("lost", window=1), row("clean", window=2)])
    assert [v.failed for v in verdicts] == [True, False]


def test_cross_rows_are_counted_but_do_not_fail_the_window_by_themselves() -> None:
    verdict = judge_window(3, [row("cross", window=3), row("clean", window=3)])
    assert (verdict.cross, verdict.failed) == (1, False)


def test_a_foreign_token_found_by_the_sweep_fails_its_window() -> None:
    verdict = judge_window(2, [row("cross", window=2, test=SWEEP_TEST), row("clean", window=2)])
    assert verdict.failed
    assert "token sweep" in (verdict.failure or "")


def test_row_results_outside_the_vocabulary_are_refused() -> None:
    with pytest.raises(ValueError):
        IsolationRow("clipboard", 0, "env01", "env02", "maybe")  # type: ignore[arg-type]


def test_trials_are_counted_per_test_across_windows() -> None:
    rows = [
        row("clean", window=1, trial=0),
        row("clean", window=1, trial=0),
        row("clean", window=2, trial=0),
        row("clean", test="keyboard_storm"),
    ]
    assert trials_per_test(rows) == {"clipboard": 2, "keyboard_storm": 1}


def test_an_open_window_contains_every_later_time() -> None:
    assert Window(1, 10.0).contains(1e12)
    assert not Window(1, 10.0, 20.0).contains(20.5)


def test_a_canary_event_fails_its_window() -> None:
    event = IsolationRow("canaries", 4, "env02", "env00", RowResult.CROSS, 3)
    verdict = judge_window(3, [row("clean", window=3), event])
    assert verdict.failed
    assert "canary event" in (verdict.failure or "")
