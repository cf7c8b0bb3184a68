"""The canary watcher on the real env00: a change inside a window is flagged."""

from __future__ import annotations

import json
import time

from cleanroom.core.outcomes import Outcome, Reason, Status
from cleanroom.core.tokens import RolloutId, mint
from cleanroom.environments.policy.handle import LocalHandle
from cleanroom.environments.pool.pool import Pool
from cleanroom.isolation.canary.watcher import CANARY, CanaryWatcher, apply_watch
from cleanroom.isolation.controls.canary import PLANTS, Plant, run_canary_control
from cleanroom.store.rundb import RunStore


def test_a_change_to_env00_inside_a_window_invalidates_exactly_the_later_rollouts(
    pool: Pool, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    with RunStore.create(tmp_path / "run") as store:
        watcher = CanaryWatcher(LocalHandle(pool, "env00"), store, interval_s=0.1)
        watcher.sample_once()  # the baseline, before the window
        store.open_window(1)
        early, late = mint(RolloutId("env01", 1, 1)), mint(RolloutId("env02", 1, 1))
        for token in (early, late):
            store.start_rollout(token, "writer")
        watcher.sample_once()
        store.finish_rollout(early.rollout_id, Outcome.success())
        time.sleep(0.05)
        leak = mint(RolloutId("env02", 1, 1))
        pool.env("env00").set_clipboard(f"leaked {leak}")  # a leak, wired in by the harness
        sample = watcher.sample_once()
        store.finish_rollout(late.rollout_id, Outcome.success())
        store.close_window(1)
        applied = apply_watch(CANARY, store, 1)
        outcomes = {r.rollout_id: (r.outcome, r.reason) for r in store.rollouts(1)}
        pool.env("env00").clear_clipboard()
    assert sample.ok and sample.sources == ("env02",)
    assert applied.verdict.flagged and applied.invalidated == 1
    assert outcomes[early.rollout_id] == (Status.SUCCESS, None)
    assert outcomes[late.rollout_id] == (Status.INVALID, Reason.ISOLATION)


def test_a_quiet_canary_window_invalidates_nothing(pool: Pool, tmp_path) -> None:  # type: ignore[no-untyped-def]
    with RunStore.create(tmp_path / "run") as store:
        watcher = CanaryWatcher(LocalHandle(pool, "env00"), store, interval_s=0.1)
        watcher.sample_once()
        store.open_window(1)
        token = mint(RolloutId("env01", 1, 1))
        store.start_rollout(token, "writer")
        for _ in range(3):
            watcher.sample_once()
        store.finish_rollout(token.rollout_id, Outcome.success())
        store.close_window(1)
        applied = apply_watch(CANARY, store, 1)
    assert not applied.verdict.flagged and applied.invalidated == 0
    assert all(s.ok for s in watcher.samples)


def test_the_canary_control_sees_each_planted_leak_and_names_its_source(pool: Pool) -> None:
    cells = run_canary_control(pool, source_env="env02")
    assert [c.leak for c in cells] == [p.leak for p in PLANTS]
    for cell in cells:
        assert cell.test == "canaries"
        assert cell.fired, cell.detail
        assert cell.cross >= 1 and "env02" in cell.detail
    clipboard = json.dumps(LocalHandle(pool, "env00").clipboard())
    assert "leaked" not in clipboard  # the clipboard plant was undone


def test_the_canary_control_does_not_fire_when_nothing_reaches_the_canary(pool: Pool) -> None:
    # The detector's negative case: a plant that lands somewhere else (env01's clipboard)
    # must leave the canary unchanged, so the control reports that it did not fire.
    def elsewhere(p: Pool, text: str) -> None:
        p.env("env01").set_clipboard(text)

    missed = Plant("planted: env01's clipboard (not the canary)", elsewhere, lambda p: None)
    [cell] = run_canary_control(pool, see_within_s=2.0, plants=[missed])
    pool.env("env01").clear_clipboard()
    assert not cell.fired
    assert cell.cross == 0 and "no change seen" in cell.detail
