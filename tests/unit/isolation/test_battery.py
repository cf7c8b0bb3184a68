"""The battery's contract: a trial that raises or returns nothing becomes lost rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest

from cleanroom.core.isolation import IsolationRow, RowResult, judge_window
from cleanroom.environments.interface import Needs
from cleanroom.environments.leaky_setups import Leak
from cleanroom.environments.memory import MemoryDesktops
from cleanroom.isolation.battery import IsolationCheck, Schedule, TrialContext, run_test
from cleanroom.store.rundb import RunStore


class _Probe(IsolationCheck):
    name: ClassVar[str] = "probe"
    number: ClassVar[int] = 99
    schedule: ClassVar[Schedule] = Schedule(window=3, soak=1)
    detects: ClassVar[tuple[Leak, ...]] = (Leak.SHARED_HOME,)
    requires: ClassVar[Needs] = Needs()

    def __init__(self, behaviour: str) -> None:
        self.behaviour = behaviour

    def run_trial(self, ctx: TrialContext, trial: int) -> list[IsolationRow]:
        if self.behaviour == "raise":
            raise RuntimeError("AT-SPI bus went away")
        if self.behaviour == "empty":
            return []
        return [IsolationRow(self.name, trial, a, b, RowResult.CLEAN, ctx.window)
                for a, b in self.pairs(ctx)]  # fmt: skip


@pytest.fixture
def ctx(tmp_path: Path) -> Any:
    store = RunStore.create(tmp_path / "run")
    pool = MemoryDesktops(tmp_path / "pool", envs=2)
    pool.start()
    yield TrialContext(pool, store, 1, store.run_dir)
    store.close()


def test_clean_trials_are_stored_for_every_pair_but_the_canary(ctx: TrialContext) -> None:
    rows = run_test(_Probe("clean"), ctx, trials=3)
    assert len(rows) == 6
    assert {(r.from_env, r.to_env) for r in rows} == {("env01", "env02"), ("env02", "env01")}
    assert ctx.store.isolation_rows() == rows


def test_later_trials_of_a_test_in_one_window_number_on_from_the_first(
    ctx: TrialContext,
) -> None:
    run_test(_Probe("clean"), ctx, trials=2)
    later = run_test(_Probe("raise"), ctx, trials=1, first=2)
    assert {r.trial for r in later} == {2}
    assert sorted({r.trial for r in ctx.store.isolation_rows()}) == [0, 1, 2]
    assert (ctx.run_dir / "evidence" / "probe" / "w001-t002" / "error.txt").exists()


def test_a_trial_that_raises_is_lost_rows_that_fail_the_window(ctx: TrialContext) -> None:
    rows = run_test(_Probe("raise"), ctx, trials=2)
    assert {r.result for r in rows} == {RowResult.LOST}
    assert "AT-SPI bus went away" in rows[0].detail
    assert judge_window(1, ctx.store.isolation_rows()).failed
    assert (ctx.run_dir / "evidence" / "probe" / "w001-t000" / "error.txt").exists()


def test_a_trial_that_returns_nothing_is_lost_not_skipped(ctx: TrialContext) -> None:
    rows = run_test(_Probe("empty"), ctx, trials=1)
    assert [r.result for r in rows] == [RowResult.LOST, RowResult.LOST]


def test_trial_tokens_never_collide_with_rollout_tokens(ctx: TrialContext) -> None:
    token = ctx.mint("env01")
    assert token.rollout.seq >= 50_000 and token.env == "env01"
