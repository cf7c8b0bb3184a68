"""The isolation checks that run on the desktop interface alone, run on the in-memory
provider: each fires under its leaky control there and stays clean on the isolated pool,
as a trial and through `run_test` into a run database on disk.

The clipboard check fires under both leaky setups it declares, each modelled in memory.
The stale-generation check and the crash check fire under their own faults: no leaky
setup makes the first fire, and the second fires under its leaks only where a crash
spreads between Unix users or displays, which the in-memory provider does not model. The
checks that reach real displays, processes or files (`real_desktops`) are tested on the
host pool only.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from cleanroom.core.isolation import IsolationRow, RowResult
from cleanroom.environments.leaky_setups import DONOR, TAKER, Leak
from cleanroom.environments.memory import MODELLED_LEAKS, MemoryDesktops
from cleanroom.isolation.battery import IsolationCheck, TrialContext, run_test
from cleanroom.isolation.checks.clipboard import ClipboardCheck
from cleanroom.isolation.checks.crash_blast_radius import (
    CrashBlastRadiusCheck,
    Killer,
    kill_environment,
)
from cleanroom.isolation.checks.stale_generation import StaleGenerationCheck
from cleanroom.isolation.controls.faults import kill_with_bystander, with_fault
from cleanroom.isolation.fault import Fault
from cleanroom.store.rundb import RunStore

WINDOW = 1
CLIPBOARD_LEAKS = [leak for leak in ClipboardCheck.detects if leak in MODELLED_LEAKS]


@contextmanager
def trials_on(run_dir: Path, leak: Leak | None = None, envs: int = 2) -> Iterator[TrialContext]:
    """A started in-memory pool (the leak between env01 and env02) and a run database on
    disk in ``run_dir``, as a check's trial context."""
    store = RunStore.create(run_dir)
    pool = MemoryDesktops(run_dir, envs=envs, leak=leak)
    pool.start()
    try:
        yield TrialContext(pool, store, WINDOW, run_dir)
    finally:
        pool.stop()
        store.close()


def _stored(ctx: TrialContext) -> dict[RowResult, int]:
    """The window's rows in the run database, by result (those it has)."""
    return {result: n for result, n in ctx.store.row_counts(WINDOW).items() if n}


def _results(rows: list[IsolationRow]) -> dict[tuple[str, str], RowResult]:
    return {(r.from_env, r.to_env): r.result for r in rows}


def _crash_check(kill: Killer = kill_environment) -> IsolationCheck:
    # Short phases: nothing in memory needs time to show a crash or a return.
    return CrashBlastRadiusCheck(phase_s=0.2, back_within_s=10.0, kill=kill)


# -- the clipboard check ----------------------------------------------------------------------


def test_every_leak_the_clipboard_check_declares_is_modelled_in_memory() -> None:
    assert list(ClipboardCheck.detects) == CLIPBOARD_LEAKS


@pytest.mark.parametrize("leak", CLIPBOARD_LEAKS, ids=str)
def test_a_clipboard_trial_under_its_leaky_setup_reports_the_crossing_pair(
    tmp_path: Path, leak: Leak
) -> None:
    with trials_on(tmp_path / "run", leak) as ctx:
        rows = ClipboardCheck(settle_s=0).run_trial(ctx, 0)
    crossed = {pair for pair, result in _results(rows).items() if result is RowResult.CROSS}
    assert crossed & {(DONOR, TAKER), (TAKER, DONOR)}, _results(rows)
    assert all(r.test == "clipboard" and r.window == WINDOW for r in rows)


def test_a_clipboard_trial_on_the_isolated_pool_reports_only_clean_rows(tmp_path: Path) -> None:
    with trials_on(tmp_path / "run", envs=3) as ctx:
        rows = ClipboardCheck(settle_s=0).run_trial(ctx, 0)
    assert len(rows) == 6  # every ordered pair of three acting environments
    assert all(r.result is RowResult.CLEAN for r in rows), _results(rows)


def test_the_clipboard_check_under_the_shared_clipboard_stores_cross_rows_through_run_test(
    tmp_path: Path,
) -> None:
    with trials_on(tmp_path / "run", Leak.SHARED_CLIPBOARD) as ctx:
        rows = run_test(ClipboardCheck(settle_s=0), ctx, trials=2)
        stored = ctx.store.isolation_rows(WINDOW)
        counts = _stored(ctx)
    assert sorted(stored, key=repr) == sorted(rows, key=repr)
    assert counts.get(RowResult.CROSS, 0) >= 2, counts  # each trial's crossing, at least
    assert sum(counts.values()) == len(rows)


def test_the_clipboard_check_on_the_isolated_pool_stores_only_clean_rows_through_run_test(
    tmp_path: Path,
) -> None:
    with trials_on(tmp_path / "run") as ctx:
        rows = run_test(ClipboardCheck(settle_s=0), ctx, trials=2)
        counts = _stored(ctx)
    assert counts == {RowResult.CLEAN: len(rows)} and len(rows) == 4, counts
    assert (ctx.run_dir / "evidence" / "clipboard" / "w001-t001" / "clipboard.json").exists()


# -- the stale-generation check, and its fault ----------------------------------------------


def test_stale_generation_with_its_check_bypassed_stores_a_cross_row(tmp_path: Path) -> None:
    with trials_on(tmp_path / "run") as ctx:
        with with_fault(Fault.GENERATION_CHECK_BYPASSED, ctx.pool) as check:
            rows = run_test(check, ctx, trials=1)
        counts = _stored(ctx)
    assert [(r.from_env, r.to_env, r.result) for r in rows] == [
        ("env01", "env01", RowResult.CROSS)
    ], rows
    assert counts == {RowResult.CROSS: 1}


def test_stale_generation_on_the_isolated_pool_stores_clean_rows(tmp_path: Path) -> None:
    with trials_on(tmp_path / "run") as ctx:
        rows = run_test(StaleGenerationCheck(), ctx, trials=2)
        counts = _stored(ctx)
        generations = {n: ctx.pool.generation(n) for n in ctx.acting_envs}
    assert [(r.from_env, r.result) for r in rows] == [
        ("env01", RowResult.CLEAN),
        ("env02", RowResult.CLEAN),
    ], rows
    assert counts == {RowResult.CLEAN: 2}
    assert generations == {"env01": 1, "env02": 1}  # each trial reset one environment


# -- the crash check, and its fault -----------------------------------------------------------


def test_a_crash_that_also_kills_a_bystander_stores_cross_rows_to_it(tmp_path: Path) -> None:
    with trials_on(tmp_path / "run") as ctx:
        rows = run_test(_crash_check(kill=kill_with_bystander), ctx, trials=1)
        stored = ctx.store.isolation_rows(WINDOW)
    results = _results(rows)
    assert results[("env01", "env02")] is RowResult.CROSS, rows
    assert results[("env01", "env00")] is RowResult.CLEAN, rows
    assert sorted(stored, key=repr) == sorted(rows, key=repr)


def test_a_crash_on_the_isolated_pool_comes_back_and_touches_nobody(tmp_path: Path) -> None:
    with trials_on(tmp_path / "run") as ctx:
        rows = run_test(_crash_check(), ctx, trials=1)
        back_at = ctx.pool.generation("env01")
    assert _results(rows) == {
        ("env01", "env00"): RowResult.CLEAN,
        ("env01", "env02"): RowResult.CLEAN,
    }, rows
    assert back_at == 1  # recovered by the watchdog at the next generation
