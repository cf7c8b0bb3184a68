"""Applying the canary's sticky rule to a stored window: which rollouts become invalid."""

from __future__ import annotations

from pathlib import Path

from cleanroom.core.canary import CanarySample, ConsoleSample, digest
from cleanroom.core.isolation import RowResult, judge_window
from cleanroom.core.outcomes import Outcome, Reason, Status
from cleanroom.core.tokens import RolloutId, mint
from cleanroom.isolation.canary.watcher import CANARY, PARKED_CONSOLE, apply_watch
from cleanroom.store.rundb import RunStore


def _sample(at: float, text: str, ok: bool = True) -> CanarySample:
    if not ok:
        return CanarySample(at, False, detail="unreadable")
    return CanarySample(at, True, text, "windows", "clipboard", window=1)


def _window_with_two_rollouts(store: RunStore) -> tuple[str, str]:
    store.open_window(1, started_at=100.0)
    early, late = mint(RolloutId("env01", 1, 1)), mint(RolloutId("env02", 1, 1))
    for token in (early, late):
        store.start_rollout(token, "writer", started_at=101.0)
    store.finish_rollout(early.rollout_id, Outcome.success(), ended_at=104.0)
    store.finish_rollout(late.rollout_id, Outcome.success(), ended_at=110.0)
    return early.rollout_id, late.rollout_id


def test_a_change_inside_the_window_invalidates_only_rollouts_ending_after_it(
    tmp_path: Path,
) -> None:
    with RunStore.create(tmp_path) as store:
        early, late = _window_with_two_rollouts(store)
        for s in (_sample(99, "a"), _sample(102, "a"), _sample(106, "leaked"), _sample(108, "a")):
            store.add_canary_sample(s)
        store.close_window(1, ended_at=110.0)
        applied = apply_watch(CANARY, store, 1)
        outcomes = {r.rollout_id: (r.outcome, r.reason) for r in store.rollouts(1)}
    assert applied.verdict.first_event_at == 106 and applied.invalidated == 1
    assert outcomes[early] == (Status.SUCCESS, None)
    assert outcomes[late] == (Status.INVALID, Reason.ISOLATION)


def test_a_clean_window_invalidates_nothing(tmp_path: Path) -> None:
    with RunStore.create(tmp_path) as store:
        _window_with_two_rollouts(store)
        for at in (99, 102, 106, 108):
            store.add_canary_sample(_sample(at, "a"))
        store.close_window(1, ended_at=110.0)
        applied = apply_watch(CANARY, store, 1)
        statuses = {r.outcome for r in store.rollouts(1)}
        lost = store.row_counts(1)[RowResult.LOST]
    assert not applied.verdict.flagged and applied.invalidated == 0 and lost == 0
    assert statuses == {Status.SUCCESS}


def test_an_unreadable_sample_is_a_lost_row_that_fails_the_window(tmp_path: Path) -> None:
    with RunStore.create(tmp_path) as store:
        _window_with_two_rollouts(store)
        store.add_canary_sample(_sample(99, "a"))
        store.add_canary_sample(_sample(103, "", ok=False))
        for at in (106, 108):
            store.add_canary_sample(_sample(at, "a"))
        store.close_window(1, ended_at=110.0)
        apply_watch(CANARY, store, 1)
        rows = store.isolation_rows(1)
    assert [r.result.value for r in rows] == ["lost", "clean", "clean"]


def test_a_window_judged_long_after_its_last_sample_has_a_lost_gap_row(tmp_path: Path) -> None:
    with RunStore.create(tmp_path) as store:
        _window_with_two_rollouts(store)
        for at in (99, 102, 106, 108):
            store.add_canary_sample(_sample(at, "a"))
        applied = apply_watch(CANARY, store, 1, until=130.0)  # a window still open, judged at 130
        rows = store.isolation_rows(1)
    lost = [r for r in rows if r.result.value == "lost"]
    assert len(lost) == 1 and "22.0 s" in lost[0].detail and "window's end" in lost[0].detail
    assert applied.verdict.largest_gap_s == 22.0 and applied.verdict.lost == 1


def test_the_parked_console_is_judged_as_rows_of_its_own_and_invalidates_later_rollouts(
    tmp_path: Path,
) -> None:
    with RunStore.create(tmp_path) as store:
        early, late = _window_with_two_rollouts(store)
        for at, text in ((99, "$ "), (102, "$ "), (106, "$ leaked"), (108, "$ leaked")):
            sources = ("env02",) if "leaked" in text else ()
            store.add_console_sample(ConsoleSample(at, True, digest(text), 0, 1, "", sources))
        store.close_window(1, ended_at=110.0)
        applied = apply_watch(PARKED_CONSOLE, store, 1)
        rows = store.isolation_rows(1)
        outcomes = {r.rollout_id: r.outcome for r in store.rollouts(1)}
    assert applied.verdict.first_event_at == 106 and applied.invalidated == 1
    assert {r.test for r in rows} == {"parked_console"}
    assert [(r.from_env, r.result.value) for r in rows if r.result.value == "cross"] == [
        ("env02", "cross")
    ]
    assert outcomes == {early: Status.SUCCESS, late: Status.INVALID}
    assert "parked console event" in (judge_window(1, rows).failure or "")
