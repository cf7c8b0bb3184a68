"""One window of the harness loop, from opening it to its verdict.

In order: open the window; one batch of smoke rollouts on every acting environment, each
batch that held a writer rollout followed by one more clipboard trial
(`plan.follow_up_trials`); the isolation tests due, each through the battery's
`run_test`; more batches until the window's minutes are over; the verify server's audit
as isolation rows (the rollouts a cross row names become invalid); the canary's sticky
flag (and the parked console's), after checking that the watcher kept looking; the
token sweep (`sweep_window`: a token resting outside its environment makes the window's
rollouts invalid); the window's verdict from all its rows
(`core.isolation.judge_window`), stored as its status: ``failed`` when it lost rows, saw
a canary or parked-console event or a swept foreign token, else ``closed``. The canary
watcher samples throughout.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

from cleanroom.core.canary import CANARY_ENV
from cleanroom.core.isolation import (
    SWEEP_TEST,
    IsolationRow,
    RowResult,
    WindowVerdict,
    judge_window,
)
from cleanroom.environments.interface import Desktops
from cleanroom.harness.form_audit_window import AuditResult, audit_window
from cleanroom.harness.plan import FOLLOW_UP_TEST, PlannedCheck, assign_tasks, follow_up_trials
from cleanroom.harness.progress import LoopProgress
from cleanroom.harness.smoke import SmokeRecord, SmokeRunner
from cleanroom.isolation.battery import IsolationCheck, TrialContext, run_test
from cleanroom.isolation.canary.watcher import (
    CANARY,
    PARKED_CONSOLE,
    AppliedVerdict,
    CanaryWatcher,
    apply_watch,
)
from cleanroom.isolation.checks import CHECKS
from cleanroom.isolation.checks.token_sweep import (
    apply_sweep,
    sweep_before_wipe,
    write_wipe_evidence,
)
from cleanroom.store.rundb import RunStore
from cleanroom.verify_server.client import VerifyClient


@dataclass(frozen=True)
class WindowPlan:
    """What one window runs."""

    index: int
    tasks: tuple[str, ...]
    tests: list[PlannedCheck]
    minutes: float = 0.0  # 0: one batch of rollouts and the tests, then close


@dataclass
class WindowServices:
    """The run's parts a window uses; all started by the loop."""

    pool: Desktops
    store: RunStore
    verify: VerifyClient
    canary: CanaryWatcher
    smoke: SmokeRunner
    battery: dict[str, IsolationCheck]
    progress: LoopProgress
    stopping: threading.Event
    # The verify server's database, which the token sweep reads.
    submissions_db: Path | None = None

    @property
    def run_dir(self) -> Path:
        return self.pool.run_dir


@dataclass(frozen=True)
class WindowResult:
    """How a window ended."""

    index: int
    status: str
    verdict: WindowVerdict
    canary: AppliedVerdict
    audit: AuditResult
    rollouts: list[SmokeRecord]
    seconds: float
    # The window's trials, so the end-of-run sweep numbers its trial on in the last window.
    trials: WindowTrials
    parked: AppliedVerdict | None = None  # the parked console's, when it is active


def run_window(s: WindowServices, plan: WindowPlan) -> WindowResult:
    """Run one window end to end and store its verdict."""
    started = time.monotonic()
    deadline = started + plan.minutes * 60
    s.store.open_window(plan.index)
    s.progress.step(f"window {plan.index} opened", window=plan.index)
    acting = [n for n in s.pool.names if n != CANARY_ENV]
    # One trial context per window, so trial tokens never repeat a rollout id in it.
    ctx = TrialContext(
        s.pool, s.store, plan.index, s.run_dir, verify=s.verify, submissions_db=s.submissions_db
    )
    trials = WindowTrials(s, ctx)
    # A reset wipes a home mid-window: its places are swept first, so a foreign token
    # there cannot be wiped away unseen before the window's close.
    wiping = partial(_sweep_before_wipe, s, trials)
    s.pool.before_wipe.append(wiping)
    try:
        records = _window_body(s, plan, acting, deadline, trials)
    finally:
        s.pool.before_wipe.remove(wiping)
    s.progress.step("verify server audit")
    senders = sorted({r.token.env for r in records})
    audit = audit_window(s.store, s.verify, plan.index, s.smoke.leased(records), senders)
    if audit.error:
        s.progress.event(f"[red]audit lost[/]: {audit.error}")
    elif audit.cross:
        s.progress.event(
            f"[red]audit: {len(audit.cross)} cross submission(s)[/], "
            f"{audit.invalidated} rollout(s) invalid (isolation)"
        )
    else:
        s.progress.event(f"audit: {len(audit.rows)} rows, no cross submission")
    s.progress.step("canary verdict")
    # The watcher's thread must have been looking all along (alive, not stalled); then
    # one last look at env00 (and the parked console), bounded in time, before judging.
    faults = s.canary.last_look()
    until = time.time()
    canary = apply_watch(CANARY, s.store, plan.index, faults=faults, until=until)
    _say_watch(s, "canary", canary)
    parked = None
    if s.canary.console is not None:
        parked = apply_watch(PARKED_CONSOLE, s.store, plan.index, faults=faults, until=until)
        _say_watch(s, "parked console", parked)
    sweeps = next((p.trials for p in plan.tests if p.name == SWEEP_TEST), 1)
    sweep_window(s, trials, sweeps, "at the window's close")
    verdict = judge_window(plan.index, s.store.isolation_rows(plan.index))
    status = "failed" if verdict.failed else "closed"
    s.store.close_window(plan.index, status=status)
    _counts(s)
    s.progress.step(
        f"window {plan.index} {status}"
        + (f": {verdict.failure}" if verdict.failure else "")
        + f" ({verdict.rows} rows, {verdict.cross} cross, {verdict.lost} lost)"
    )
    return WindowResult(
        plan.index,
        status,
        verdict,
        canary,
        audit,
        records,
        time.monotonic() - started,
        trials,
        parked,
    )


def _window_body(
    s: WindowServices, plan: WindowPlan, acting: list[str], deadline: float, trials: WindowTrials
) -> list[SmokeRecord]:
    """The window's rollouts and isolation tests, up to its audit."""
    records = _batch(s, plan, acting, 0, trials)
    for planned in plan.tests:
        if planned.name != SWEEP_TEST:  # the sweep runs at the close, after everything
            trials.run(planned.name, planned.trials)
    batch = 1
    while time.monotonic() < deadline:
        records += _batch(s, plan, acting, batch, trials)
        batch += 1
    return records


def _sweep_before_wipe(s: WindowServices, trials: WindowTrials, env: str) -> None:
    """Sweep ``env``'s places before a reset or recovery wipes them; store the rows (only
    cross and lost ones) and make the window's rollouts invalid on a foreign token."""
    ctx = trials.ctx
    started = time.monotonic()
    try:
        rows = sweep_before_wipe(ctx, 0, env)
    except Exception as exc:  # a sweep that could not run saw nothing: lost, never clean
        why = f"{env}'s places could not be swept before its reset: {type(exc).__name__}: {exc}"
        rows = [IsolationRow(SWEEP_TEST, 0, env, env, RowResult.LOST, ctx.window, why)]
    # What it costs a reset, kept with the other timings of the run.
    ctx.record_latency(SWEEP_TEST, env, (time.monotonic() - started) * 1000, "before wipe")
    if not rows:
        return  # nothing found and nothing unreadable: no trial of its own
    trial = trials.reserve(SWEEP_TEST)
    rows = [replace(r, trial=trial) for r in rows]
    write_wipe_evidence(ctx, env, rows)
    s.store.add_isolation_rows(rows)
    _apply_sweep(s, trials, rows, f"token sweep before {env}'s reset")


def sweep_window(s: WindowServices, trials: WindowTrials, n: int, why: str) -> list[IsolationRow]:
    """Run the token sweep in the trials' window and make the window's rollouts invalid
    (``isolation``) if it found a token outside its environment; return its rows."""
    # A battery made for one purpose may leave the sweep out; the window still runs it.
    rows = trials.run_test(s.battery.get(SWEEP_TEST, CHECKS[SWEEP_TEST]), n, why=why)
    _apply_sweep(s, trials, rows, "token sweep")
    return rows


def _apply_sweep(
    s: WindowServices, trials: WindowTrials, rows: list[IsolationRow], what: str
) -> None:
    """The window's rollouts made invalid by the sweep's cross rows, and said."""
    invalidated = apply_sweep(s.store, trials.ctx.window, rows, trials.ctx.minted)
    if any(r.result is RowResult.CROSS for r in rows):
        s.progress.event(
            f"[red]{what}: a token outside its environment[/], "
            f"{invalidated} rollout(s) invalid (isolation)"
        )


def _say_watch(s: WindowServices, watch: str, applied: AppliedVerdict) -> None:
    v = applied.verdict
    gap = "-" if v.largest_gap_s is None else f"{v.largest_gap_s:.1f} s"
    s.progress.event(
        f"{watch}: {v.samples} sample(s), {v.lost} lost, largest gap {gap} "
        f"(tolerance {v.tolerance_s:g} s)"
    )
    if v.flagged:
        s.progress.event(
            f"[red]{watch} event[/]: {'; '.join(v.changes)}; "
            f"{applied.invalidated} rollout(s) invalid (isolation)"
        )


class WindowTrials:
    """Runs a window's isolation trials, numbering each test's trials on from the last."""

    def __init__(self, s: WindowServices, ctx: TrialContext) -> None:
        self.s = s
        self.ctx = ctx
        self.next: dict[str, int] = {}
        self._numbering = threading.Lock()  # rollouts' resets sweep from their own threads

    def reserve(self, name: str, n: int = 1) -> int:
        """The first of ``n`` trial numbers of ``name`` no other trial of the window has."""
        with self._numbering:
            first = self.next.get(name, 0)
            self.next[name] = first + n
            return first

    def run(self, name: str, n: int, why: str = "") -> list[IsolationRow]:
        """Run ``n`` trials of the battery's test ``name``; return their rows."""
        return self.run_test(self.s.battery[name], n, why)

    def run_test(self, test: IsolationCheck, n: int, why: str = "") -> list[IsolationRow]:
        """Run ``n`` trials of ``test``; return their rows."""
        s, name = self.s, test.name
        s.progress.step(f"isolation test {name}: {n} trial(s)" + (f", {why}" if why else ""))
        first = self.reserve(name, n)
        rows = run_test(test, self.ctx, n, first=first)
        found = {r: sum(1 for x in rows if x.result is r) for r in RowResult}
        s.progress.event(
            f"{name}: {len(rows)} rows, {found[RowResult.CROSS]} cross, "
            f"{found[RowResult.LOST]} lost"
        )
        _counts(s)
        return rows


def _batch(
    s: WindowServices, plan: WindowPlan, acting: list[str], n: int, trials: WindowTrials
) -> list[SmokeRecord]:
    """One batch of smoke rollouts, then its follow-up clipboard trial if one is due."""
    if not plan.tasks:
        return []
    # Rotate by window and batch so that every environment runs every task over time.
    assignments = assign_tasks(acting, plan.tasks, plan.index - 1 + n)
    s.progress.step("smoke rollouts: " + ", ".join(f"{task} in {env}" for env, task in assignments))
    records = s.smoke.run_batch(plan.index, assignments)
    follow_ups = follow_up_trials(plan.tests, (r.task for r in records))
    if follow_ups:
        trials.run(FOLLOW_UP_TEST, follow_ups, why="the follow-up to a writer rollout")
    return records


def _counts(s: WindowServices) -> None:
    c = s.store.row_counts()
    s.progress.counts(rows=sum(c.values()), cross=c[RowResult.CROSS], lost=c[RowResult.LOST])
