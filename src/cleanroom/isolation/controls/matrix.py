"""The leaky controls: every isolation test run under each leaky setup it
names, under its own deliberate fault if it has one, and on the isolated pool.

For each setup one pool is started, running the programs its tests need, and every test
of the setup runs a few trials there; the rows go to a run database of that setup's own
(leaky rows must never reach a run's published number). A fault setup (``fault:<name>``,
see `faults`) is an isolated pool with that one protection of the pool removed while its
test runs. One verify server serves the whole run (observation privacy shows its pages).
Each (test, leak or fault) cell is recorded as a `LeakyControlResult` in the caller's run
database; the isolated cells are kept in ``controls.json``. A test that fires under none
of its leaks and faults is unproven; a test that reports cross on the isolated pool is a
finding in itself.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from itertools import count
from pathlib import Path
from typing import Any

from cleanroom.core.isolation import IsolationRow, RowResult
from cleanroom.environments.interface import Desktops
from cleanroom.environments.leaky_setups import Leak
from cleanroom.environments.providers import DEFAULT_ROOT, PoolConfig, open_pool
from cleanroom.isolation.battery import IsolationCheck, TrialContext, run_test
from cleanroom.isolation.checks import observing_for
from cleanroom.isolation.checks.observation_privacy import DURATION_S, ObservationPrivacyCheck
from cleanroom.isolation.controls.faults import with_fault
from cleanroom.isolation.fault import Fault
from cleanroom.store.rundb import LeakyControlResult, RunStore
from cleanroom.verify_server.client import VerifyClient
from cleanroom.verify_server.process import VerifyServerProcess

ISOLATED = "isolated"
FAULT_PREFIX = "fault:"
CONTROLS_FILE = "controls.json"
DEFAULT_TRIALS = 1
# Observation privacy keeps the even environments idle for 120 s in a window; a control
# only has to show that the test can fire (and stays clean when isolated), which a short
# watch does. Said in the matrix's notes.
CONTROLS_OBSERVATION_S = 10.0
VERIFY_START_S = 60.0  # a loaded machine starts the verify server slowly


def fault_setup(fault: Fault) -> str:
    """The setup name of a deliberate fault: ``fault:<name>``."""
    return f"{FAULT_PREFIX}{fault.value}"


def setup_fault(setup: str) -> Fault | None:
    """The fault a setup name stands for, or None for a leak or the isolated pool."""
    return Fault(setup.removeprefix(FAULT_PREFIX)) if setup.startswith(FAULT_PREFIX) else None


def faults_of(test: IsolationCheck) -> list[Fault]:
    """The deliberate faults that are leaky controls of ``test``."""
    return list(test.faults)


def setup_programs(tests: Iterable[IsolationCheck], base: Iterable[str] = ()) -> tuple[str, ...]:
    """The programs a pool for ``tests`` runs: ``base`` and every test's `needs`, each
    once, in the order first named."""
    programs: list[str] = []
    for name in [*base, *(p for t in tests for p in t.needs)]:
        if name not in programs:
            programs.append(name)
    return tuple(programs)


def for_controls(
    test: IsolationCheck, observation_s: float = CONTROLS_OBSERVATION_S
) -> IsolationCheck:
    """``test`` as a control runs it: observation privacy watches for ``observation_s``
    instead of its window's period; every other test is run as it is in the table."""
    return observing_for(test, observation_s)


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
    # Tests that name no leak kind: only a fault of their own can prove them; without
    # one they are unproven here even though they ran on the isolated pool.
    names_no_leak: list[str] = field(default_factory=list)
    # How this run differs from a window's (shortened periods), for the output.
    notes: list[str] = field(default_factory=list)

    def cell(self, test: str, setup: str) -> Cell | None:
        """The cell of one test on one setup, if it ran."""
        return next((c for c in self.cells if c.test == test and c.setup == setup), None)

    def proven(self, test: str) -> list[str]:
        """The leaks and faults under which ``test`` fired."""
        return [c.setup for c in self.cells if c.test == test and c.setup != ISOLATED and
                c.verdict == "fired"]  # fmt: skip

    def unproven(self) -> list[str]:
        """Tests that ran under at least one leak or fault and fired under none, and tests
        that name no leak and fired under no fault."""
        tests = {c.test for c in self.cells if c.setup != ISOLATED} | set(self.names_no_leak)
        return [t for t in sorted(tests) if not self.proven(t)]

    def has_fault_cell(self, test: str) -> bool:
        """Whether ``test`` ran under a fault of its own."""
        return any(c.test == test and c.setup.startswith(FAULT_PREFIX) for c in self.cells)

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
            "notes": list(self.notes),
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
    tests: Iterable[IsolationCheck],
    leaks: Iterable[Leak] | None = None,
    *,
    isolated: bool = True,
    faults: bool = True,
) -> dict[str, list[IsolationCheck]]:
    """Which tests run on which setup: all on the isolated pool, each leak's tests on that
    leak (only the leaks in ``leaks`` when given), and each test that has a fault of its
    own under that fault (``fault:<name>``). One pool per setup serves all."""
    tests = list(tests)
    wanted = set(Leak) if leaks is None else {Leak(k) for k in leaks}
    plan: dict[str, list[IsolationCheck]] = {}
    if isolated:
        plan[ISOLATED] = list(tests)
    for leak in Leak:
        members = [t for t in tests if leak in t.detects]
        if leak in wanted and members:
            plan[leak.value] = members
    if faults:
        for fault in Fault:
            members = [t for t in tests if fault in faults_of(t)]
            if members:
                plan[fault_setup(fault)] = members
    return plan


def setups_of(test: IsolationCheck) -> list[str]:
    """Every setup that is a leaky control of ``test``: the leaks it names, in the
    order of `Leak`, then its own faults."""
    return [k.value for k in Leak if k in test.detects] + [fault_setup(f) for f in faults_of(test)]


def cover_setups(
    tests: Iterable[IsolationCheck], tried: Mapping[str, Iterable[str]] | None = None
) -> dict[str, list[IsolationCheck]]:
    """The fewest setups that give every test one leaky control it has not tried yet,
    each test on one setup only: the cheap way to prove every check in a run.

    Greedy: the setup that covers the most tests still uncovered first (ties go to the
    order of `setups_of`). ``tried`` maps a test to the setups it already ran under; a
    test with no setup left is not planned.
    """
    tried = tried or {}
    options = {
        t.name: [x for x in setups_of(t) if x not in set(tried.get(t.name, ()))] for t in tests
    }
    # In test-number order, so the tests that reset or crash an environment come last and
    # the setup's pool serves every other test first.
    by_name = {t.name: t for t in sorted(tests, key=lambda t: t.number)}
    order = list(dict.fromkeys(x for t in tests for x in setups_of(t)))
    uncovered = {name for name, opts in options.items() if opts}
    plan: dict[str, list[IsolationCheck]] = {}
    while uncovered:
        best = max(order, key=lambda x: sum(1 for n in uncovered if x in options[n]))
        members = [n for n in by_name if n in uncovered and best in options[n]]
        plan[best] = [by_name[n] for n in members]
        uncovered -= set(members)
    return plan


def run_controls(
    run_dir: Path,
    store: RunStore,
    tests: Sequence[IsolationCheck],
    *,
    leaks: Iterable[Leak] | None = None,
    cover: bool = False,
    trials: int = DEFAULT_TRIALS,
    isolated: bool = True,
    faults: bool = True,
    envs: int = 2,
    # Started in every environment besides what the setup's tests need.
    programs: tuple[str, ...] = (),
    observation_s: float = CONTROLS_OBSERVATION_S,
    pool_root: Path | None = None,
    on_cell: Callable[[Cell], None] | None = None,
    warm_standby: bool = False,
    gvisor: bool = False,
) -> ControlMatrix:
    """Run the matrix and record each leaky and fault cell in ``store``; return the matrix.

    With ``cover`` (the run's own controls), ``leaks``, ``isolated`` and ``faults`` are
    not used: each test runs under one setup of `cover_setups`, and a test that did not
    fire there runs again under the next setup it names, until it fires or none is left.
    A pool that does not start makes every cell of its setup lost, with the reason. One
    verify server, in ``run_dir/verify-server``, serves every setup and is stopped at the
    end. ``warm_standby`` gives the pools spare slots where a setup allows them (not
    to the two ends of a leak), so that the faults are proven on the resets a run makes.
    ``gvisor`` runs every pool with a kernel per sandbox (`PoolConfig.gvisor`).
    """
    tests = [for_controls(t, observation_s) for t in tests]
    matrix = ControlMatrix(names_no_leak=sorted(t.name for t in tests if not t.detects))
    if any(isinstance(t, ObservationPrivacyCheck) for t in tests):
        matrix.notes.append(
            f"observation_privacy watched for {observation_s:g} s per trial here"
            f" ({DURATION_S:g} s in a window)"
        )
    if cover:
        plan = cover_setups(tests)
    else:
        plan = plan_setups(tests, leaks, isolated=isolated, faults=faults)
    with VerifyServerProcess.start(run_dir / "verify-server", timeout_s=VERIFY_START_S) as server:
        verify = server.client(timeout=30.0)
        try:
            while plan:
                for setup, members in plan.items():
                    run = _run_setup(
                        run_dir,
                        setup,
                        members,
                        trials,
                        envs,
                        programs,
                        pool_root,
                        verify,
                        warm_standby,
                        gvisor,
                    )
                    for cell in run:
                        _record(matrix, store, cell, on_cell)
                # The cover runs on until every test fired or has no setup left to try.
                plan = cover_setups(_unfired(tests, matrix), _tried(matrix)) if cover else {}
        finally:
            verify.close()
    (run_dir / CONTROLS_FILE).write_text(json.dumps(matrix.to_json(), indent=1))
    return matrix


def _record(
    matrix: ControlMatrix, store: RunStore, cell: Cell, on_cell: Callable[[Cell], None] | None
) -> None:
    matrix.cells.append(cell)
    if cell.setup != ISOLATED:
        store.add_leaky_control(
            LeakyControlResult(
                cell.test,
                cell.setup,
                cell.verdict == "fired",
                cell.rows,
                cell.cross,
                f"{cell.verdict}: {cell.detail}"[:500],
            )
        )
    if on_cell is not None:
        on_cell(cell)


def _unfired(tests: Sequence[IsolationCheck], matrix: ControlMatrix) -> list[IsolationCheck]:
    return [t for t in tests if not matrix.proven(t.name)]


def _tried(matrix: ControlMatrix) -> dict[str, list[str]]:
    tried: dict[str, list[str]] = {}
    for c in matrix.cells:
        tried.setdefault(c.test, []).append(c.setup)
    return tried


def _fresh_folder(parent: Path, name: str) -> Path:
    """``parent/name``, or ``name-2``, ``name-3``... the first that is not there yet."""
    for n in count(1):
        folder = parent / (name if n == 1 else f"{name}-{n}")
        if not folder.exists():
            return folder
    raise AssertionError("unreachable")


def _run_setup(
    run_dir: Path,
    setup: str,
    tests: list[IsolationCheck],
    trials: int,
    envs: int,
    programs: tuple[str, ...],
    pool_root: Path | None,
    verify: VerifyClient,
    warm_standby: bool = False,
    gvisor: bool = False,
) -> Iterator[Cell]:
    """Run ``tests`` on pools of one setup, yielding each cell as it is judged. A test that
    reset, recovered or broke an environment (crash_blast_radius, reset_during_write, ...)
    leaves a pool that is no longer the setup as built, so the next test gets a fresh pool
    of its own. Under a fault setup each test runs with the fault in place."""
    fault = setup_fault(setup)
    leak = None if setup == ISOLATED or fault is not None else Leak(setup)
    config = PoolConfig(
        envs=envs,
        programs=setup_programs(tests, programs),
        canary_programs=(),
        leak=leak,
        root=pool_root or DEFAULT_ROOT,
        warm_standby=warm_standby,
        gvisor=gvisor,
    )
    todo = list(tests)
    while todo:
        # A setup runs again in a later round of the cover (for a test that has not fired
        # yet) and once per fresh pool: each run gets a folder of its own.
        sub = _fresh_folder(run_dir / "controls", setup.replace(":", "-"))
        sub_store = RunStore.create(sub, meta={"leaky_setup": setup})
        pool = open_pool(config, sub, sub_store)
        try:
            started = time.monotonic()
            try:
                pool.start()
            except Exception as exc:  # every remaining cell of this setup is lost
                why = f"the {setup} pool did not start: {type(exc).__name__}: {exc}"
                for t in todo:
                    yield Cell(t.name, setup, "lost", 0, 0, 0,
                               round(time.monotonic() - started, 1), why[:300])  # fmt: skip
                return
            ctx = TrialContext(pool, sub_store, 0, sub, verify=verify)
            as_built = _condition(pool)
            while todo:
                test = todo.pop(0)
                t0 = time.monotonic()
                rows = _run_one(test, fault, ctx, trials)
                yield judge_cell(test.name, setup, rows, time.monotonic() - t0)
                if _condition(pool) != as_built:
                    break
        finally:
            pool.stop()
            sub_store.close()


def _run_one(
    test: IsolationCheck, fault: Fault | None, ctx: TrialContext, trials: int
) -> list[IsolationRow]:
    """Run ``test``'s trials, with ``fault`` in place on the pool when there is one."""
    if fault is None:
        return run_test(test, ctx, trials)
    with with_fault(fault, ctx.pool) as faulty:
        if faulty.name != test.name:
            raise ValueError(f"fault {fault.value} proves {faulty.name}, not {test.name}")
        return run_test(faulty, ctx, trials)


def _condition(pool: Desktops) -> dict[str, tuple[int, bool]]:
    """Each environment's generation and whether it is healthy."""
    return {n: (pool.generation(n), not pool.health(n)) for n in pool.names}
