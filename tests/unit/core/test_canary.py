"""The canary's rule: a change inside a window is an event, sticky; a lost read fails, and
so does a span of the window that no readable look covered."""

from __future__ import annotations

from cleanroom.core.canary import (
    GAP_TOLERANCE_S,
    PARKED_CONSOLE_TEST,
    CanarySample,
    ConsoleSample,
    coverage_gaps,
    digest,
    judge_canary,
    last_good_before,
)
from cleanroom.core.isolation import RowResult, Window, judge_window
from cleanroom.core.tokens import scan_text

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


# -- coverage: a span without a readable look longer than the tolerance is lost ----------


def test_a_gap_between_looks_beyond_the_tolerance_is_a_lost_row_that_fails_the_window() -> None:
    window = Window(1, 10.0, 22.0)
    samples = [sample(t) for t in (10, 12, 20, 22)]  # nothing seen from 12 to 20
    verdict, rows = judge_canary(window, samples)
    lost = [r for r in rows if r.result is RowResult.LOST]
    assert len(lost) == 1
    assert "8.0 s" in lost[0].detail and "between two looks" in lost[0].detail
    assert verdict.largest_gap_s == 8.0 and verdict.tolerance_s == GAP_TOLERANCE_S
    assert judge_window(1, rows).failed


def test_gaps_within_the_tolerance_leave_the_window_clean() -> None:
    window = Window(1, 10.0, 28.0)
    samples = [sample(t) for t in (10 + GAP_TOLERANCE_S, 10 + 2 * GAP_TOLERANCE_S, 28)]
    verdict, rows = judge_canary(window, samples)
    assert {r.result for r in rows} == {RowResult.CLEAN}
    assert verdict.largest_gap_s == GAP_TOLERANCE_S and not judge_window(1, rows).failed


def test_a_window_without_any_look_is_lost_as_a_whole() -> None:
    verdict, rows = judge_canary(Window(1, 10.0, 40.0), [sample(5)])
    assert [r.result for r in rows] == [RowResult.LOST]
    assert "the whole window" in rows[0].detail and verdict.largest_gap_s == 30.0


def test_the_gaps_at_both_ends_of_a_window_count() -> None:
    late_start = judge_canary(Window(1, 10.0, 20.0), [sample(18), sample(20)])[1]
    assert any("window's start" in r.detail for r in late_start if r.result is RowResult.LOST)
    # A window not closed yet ends when it is judged (``until``).
    early_end = judge_canary(Window(1, 10.0), [sample(10), sample(12)], until=30.0)[1]
    assert any("window's end" in r.detail for r in early_end if r.result is RowResult.LOST)


def test_an_unreadable_sample_is_no_look_for_coverage() -> None:
    samples = [sample(10), sample(12, ok=False), sample(14, ok=False), sample(16, ok=False),
               sample(18, ok=False), sample(20)]  # fmt: skip
    verdict, rows = judge_canary(Window(1, 10.0, 20.0), samples)
    gap_rows = [r for r in rows if r.result is RowResult.LOST and "no readable look" in r.detail]
    assert len(gap_rows) == 1 and verdict.largest_gap_s == 10.0 and verdict.lost == 5


def test_a_fault_of_the_watcher_is_a_lost_row() -> None:
    fault = "the canary watcher's thread died: RuntimeError: boom"
    _, rows = judge_canary(Window(1, 10.0, 12.0), [sample(10), sample(12)], faults=[fault])
    assert [(r.result, r.detail) for r in rows if r.result is RowResult.LOST] == [
        (RowResult.LOST, fault)
    ]


def test_coverage_gaps_measure_from_start_between_looks_and_to_the_end() -> None:
    gaps = coverage_gaps(Window(1, 0.0, 10.0), [7.0, 1.0, 3.0])
    assert [(g.start, g.end) for g in gaps] == [(0.0, 1.0), (1.0, 3.0), (3.0, 7.0), (7.0, 10.0)]


# -- the parked console: the same rule, its own rows ---------------------------------------


def console(at: float, text: str = "$ ", history: int = 0) -> ConsoleSample:
    sources = tuple(sorted({h.env for h in scan_text(text)}))
    return ConsoleSample(at, True, digest(text), history, sources=sources)


def test_a_change_in_the_parked_console_is_an_event_of_its_own_test() -> None:
    token = "env03-w001-r0004-0123abcd"
    samples = [console(10), console(12), console(14, f"$ {token}"), console(16, f"$ {token}")]
    verdict, rows = judge_canary(Window(1, 10.0, 16.0), samples, test=PARKED_CONSOLE_TEST)
    assert verdict.first_event_at == 14 and verdict.changes == ["14.000: pane text changed"]
    cross = [r for r in rows if r.result is RowResult.CROSS]
    assert [(r.test, r.from_env, r.to_env) for r in cross] == [
        (PARKED_CONSOLE_TEST, "env03", "env00")
    ]
    assert "parked console event" in (judge_window(1, rows).failure or "")


def test_a_grown_history_alone_is_a_change_of_the_parked_console() -> None:
    samples = [console(10), console(12, history=3)]
    verdict, _ = judge_canary(Window(1, 10.0, 12.0), samples, test=PARKED_CONSOLE_TEST)
    assert verdict.changes == ["12.000: history size changed"]
