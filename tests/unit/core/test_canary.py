"""The canary's rule: a change inside a window is an event, sticky; a lost read fails."""

from __future__ import annotations

from cleanroom.core.canary import (
    CanarySample,
    digest,
    judge_canary,
    last_good_before,
)
from cleanroom.core.isolation import RowResult, Window, judge_window

EMPTY = (digest(""), digest("Untitled 1 - LibreOffice Writer"), digest(None))


def sample(
    at: float, text: str = "", ok: bool = True, sources: tuple[str, ...] = ()
) -> CanarySample:
    if not ok:
        return CanarySample(at, False, detail="AT-SPI read failed")
    return CanarySample(at, True, digest(text), EMPTY[1], EMPTY[2], sources=sources)


def test_an_unchanged_canary_raises_no_flag() -> None:
    window = Window(1, 10.0, 20.0)
    verdict, rows = judge_canary(window, [sample(t) for t in (10, 12, 14, 16, 18, 20)])
    assert not verdict.flagged
    assert {r.result for r in rows} == {RowResult.CLEAN}


def test_a_change_inside_the_window_is_an_event_with_its_time() -> None:
    window = Window(1, 10.0, 20.0)
    samples = [
        sample(10),
        sample(12),
        sample(14, "env02-w001-r0002-abcdef01", sources=("env02",)),
        sample(16, "env02-w001-r0002-abcdef01"),
    ]
    verdict, rows = judge_canary(window, samples)
    assert verdict.first_event_at == 14
    assert verdict.changes == ["14.000: focused text changed"]
    cross = [r for r in rows if r.result is RowResult.CROSS]
    assert [(r.from_env, r.to_env) for r in cross] == [("env02", "env00")]


def test_the_baseline_before_the_window_catches_a_change_at_its_first_sample() -> None:
    before = sample(8)
    verdict, _ = judge_canary(Window(1, 10.0, 20.0), [sample(10, "typed")], baseline=before)
    assert verdict.first_event_at == 10


def test_a_change_outside_the_window_is_not_this_windows_event() -> None:
    verdict, _ = judge_canary(Window(2, 30.0, 40.0), [sample(10), sample(25, "x"), sample(32, "x")])
    assert not verdict.flagged


def test_an_unreadable_sample_is_lost_and_fails_the_window() -> None:
    window = Window(1, 10.0, 20.0)
    verdict, rows = judge_canary(window, [sample(10), sample(12, ok=False), sample(14)])
    assert verdict.lost == 1
    assert judge_window(1, rows).failed


def test_last_good_before_skips_lost_samples() -> None:
    samples = [sample(1), sample(2, "x"), sample(3, ok=False)]
    base = last_good_before(samples, 5)
    assert base is not None and base.at == 2
