"""The per-test positive controls: every isolation test run under each leaky setup it
names, and on the isolated pool.

For each setup one pool is started and every test that needs it runs a few trials
there; the rows go to a run database of that setup's own (leaky rows must never reach a
run's published number). Each (test, leak) cell is recorded as a `LeakyControlResult`
in the caller's run database; the isolated cells are kept in ``controls.json``. A test
that fires under none of its leaks is unproven; a test that reports cross on the
isolated pool is a finding in itself.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from itertools import count
from pathlib import Path
from typing import Any

from cleanroom.core.isolation import IsolationRow, RowResult
from cleanroom.environments.leaks import Leak
from cleanroom.environments.pool import DEFAULT_ROOT, Pool, PoolConfig
from cleanroom.isolation.battery import IsolationTest, TrialContext, run_test
from cleanroom.store.rundb import LeakyControlResult, RunStore

ISOLATED = "isolated"
CONTROLS_FILE = "controls.json"
DEFAULT_TRIALS = 1


@dataclass(frozen=True)
class Cell:
    """One test on one setup: what its rows said."""

    test: str
    setup: str  # a leak kind, or "isolated"
    verdict: str  # fired | clean | lost
    rows: int
    cross: int
    lost: int
    seconds: float
    detail: str = ""


@dataclass
class ControlMatrix:
    """Every cell, and what they say about each test."""

    cells: list[Cell] = field(default_factory=list)
    # Tests that name no leak kind: no leaky setup can prove them, so they are unproven
    # here even though they ran on the isolated pool.
    names_no_leak: list[str] = field(default_factory=list)

    def cell(self, test: str, setup: str) -> Cell | None:
        """The cell of one test on one setup, if it ran."""
        return next((c for c in self.cells if c.test == test and c.setup == setup), None)

    def proven(self, test: str) -> list[str]:
        """The leaks under which ``test`` fired."""
        return [c.setup for c in self.cells if c.test == test and c.setup != ISOLATED and
                c.verdict == "fired"]  # fmt: skip

    def unproven(self) -> list[str]:
        """Tests that ran under at least one leak and fired under none, and tests that
        name no leak at all."""
        tests = {c.test for c in self.cells if c.setup != ISOLATED} | set(self.names_no_leak)
        return [t for t in sorted(tests) if not self.proven(t)]

    def cross_when_isolated(self) -> list[str]:
        """Tests that reported cross on the isolated pool."""
        return sorted({c.test for c in self.cells if c.setup == ISOLATED and c.cross})

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "cells": [asdict(c) for c in self.cells],
            "unproven": self.unproven(),
            "names_no_leak": sorted(self.names_no_leak),
            "cross_when_isolated": self.cross_when_isolated(),
        }


def judge_cell(test: str, setup: str, rows: Sequence[IsolationRow], seconds: float) -> Cell:
    """A cell's verdict: fired if any row is cross, else lost if any is lost (or there are
    none), else clean."""
    cross = sum(1 for r in rows if r.result is RowResult.CROSS)
    lost = sum(1 for r in rows if r.result is RowResult.LOST)
    if cross:
        verdict = "fired"
    elif lost or not rows:
        verdict = "lost"
    else:
        verdict = "clean"
    detail = next((r.detail for r in rows if r.result is RowResult.CROSS), "") or next(
        (r.detail for r in rows if r.result is RowResult.LOST), ""
    )
    return Cell(test, setup, verdict, len(rows), cross, lost, round(seconds, 1), detail[:300])


def plan_setups(
    tests: Iterable[IsolationTest], leaks: Iterable[Leak] | None = None, *, isolated: bool = True
) -> dict[str, list[IsolationTest]]:
    """Which tests run on which setup: all on the isolated pool, and each leak's tests on
    that leak (only the leaks in ``leaks`` when given). One pool per setup serves all."""
    tests = list(tests)
    wanted = set(Leak) if leaks is None else {Leak(k) for k in leaks}
    plan: dict[str, list[IsolationTest]] = {}
    if isolated:
        plan[ISOLATED] = list(tests)
    for leak in Leak:
        members = [t for t in tests if leak in t.detects]
        if leak in wanted and members:
            plan[leak.value] = members
    return plan


def run_controls(
    run_dir: Path,
    store: RunStore,
    tests: Sequence[IsolationTest],
    *,
    leaks: Iterable[Leak] | None = None,
    trials: int = DEFAULT_TRIALS,
    isolated: bool = True,
    envs: int = 2,
    # Writer for the typing tests, a terminal for files_and_prefs's shell.
    programs: tuple[str, ...] = ("writer", "terminal"),
    pool_root: Path | None = None,
    on_cell: Callable[[Cell], None] | None = None,
) -> ControlMatrix:
    """Run the matrix and record each leaky cell in ``store``; return the matrix.

    A pool that does not start makes every cell of its setup lost, with the reason.
    """
    matrix = ControlMatrix(names_no_leak=sorted(t.name for t in tests if not t.detects))
    for setup, members in plan_setups(tests, leaks, isolated=isolated).items():
        for cell in _run_setup(run_dir, setup, members, trials, envs, programs, pool_root):
            matrix.cells.append(cell)
            if setup != ISOLATED:
                store.add_leaky_control(
                    LeakyControlResult(
                        cell.test,
                        setup,
                        cell.verdict == "fired",
                        cell.rows,
                        cell.cross,
                        f"{cell.verdict}: {cell.detail}"[:500],
                    )
                )
            if on_cell is not None:
                on_cell(cell)
    (run_dir / CONTROLS_FILE).write_text(json.dumps(matrix.to_json(), indent=1))
    return matrix


def _run_setup(
    run_dir: Path,
    setup: str,
    tests: list[IsolationTest],
    trials: int,
    envs: int,
    programs: tuple[str, ...],
    pool_root: Path | None,
) -> list[Cell]:
    """Run ``tests`` on pools of one setup. A test that reset, recovered or broke an
    environment (crash_blast_radius, reset_during_write, ...) leaves a pool that is no
    longer the setup as built, so the next test gets a fresh pool of its own."""
    leak = None if setup == ISOLATED else Leak(setup)
    config = PoolConfig(
        envs=envs, programs=programs, canary_programs=(), leak=leak, root=pool_root or DEFAULT_ROOT
    )
    cells: list[Cell] = []
    todo = list(tests)
    for attempt in count(1):
        if not todo:
            break
        sub = run_dir / "controls" / (setup if attempt == 1 else f"{setup}-{attempt}")
        sub_store = RunStore.create(sub, meta={"leaky_setup": setup})
        pool = Pool(config, sub, sub_store)
        try:
            started = time.monotonic()
            try:
                pool.start()
            except Exception as exc:  # every remaining cell of this setup is lost
                why = f"the {setup} pool did not start: {type(exc).__name__}: {exc}"
                cells += [Cell(t.name, setup, "lost", 0, 0, 0, time.monotonic() - started,
                               why[:300]) for t in todo]  # fmt: skip
                break
            ctx = TrialContext(pool, sub_store, 0, sub)
            as_built = _condition(pool)
            while todo:
                test = todo.pop(0)
                t0 = time.monotonic()
                rows = run_test(test, ctx, trials)
                cells.append(judge_cell(test.name, setup, rows, time.monotonic() - t0))
                if _condition(pool) != as_built:
                    break
        finally:
            pool.stop()
            sub_store.close()
    return cells


def _condition(pool: Pool) -> dict[str, tuple[int, bool]]:
    """Each environment's generation and whether it is healthy."""
    return {n: (pool.generation(n), not pool.env(n).problems()) for n in pool.names}
