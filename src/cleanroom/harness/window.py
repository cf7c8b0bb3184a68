"""One window of the harness loop, from opening it to its verdict.

In order: open the window; one batch of smoke rollouts on every acting environment, each
batch that held a writer rollout followed by one more clipboard trial
(`plan.follow_up_trials`); the isolation tests due, each through the battery's
`run_test`; more batches until the window's minutes are over; the verify server's audit
as isolation rows (the rollouts a cross row names become invalid); the canary's sticky
flag (and the parked console's), after checking that the watcher kept looking; the
token sweep (`sweep_window`: a token resting outside its environment makes the window's
rollouts invalid, and what an environment's own programs did to the sweep, a forged token
or a selection that never answered, scores the rollout that did it 0); the window's
verdict from all its rows (`core.isolation.judge_window`), stored as its status:
``failed`` when it lost rows, saw a canary or parked-console event or a swept foreign
token, else ``closed``. The canary watcher samples throughout.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field, replace
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
from cleanroom.core.sweep import (
    ACT_REASONS,
    OwnAct,
    RolloutSpan,
    SweepJudgement,
    writing_rollouts,
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
    # Every token the run's trials minted, across its windows: a token found that the
    # run never minted is the writer's own act, so none may be forgotten.
    minted: set[str] = field(default_factory=set)

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
        s.pool,
        s.store,
        plan.index,
        s.run_dir,
        verify=s.verify,
        submissions_db=s.submissions_db,
        minted=s.minted,
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
    audit = audit_window(s.store, s.verify, plan.index, s.smoke.leased(records), senders, s.minted)
    if audit.error:
        s.progress.event(f"[red]audit lost[/]: {audit.error}")
    elif audit.cross:
        s.progress.event(
            f"[red]audit: {len(audit.cross)} cross submission(s)[/], "
            f"{audit.invalidated} rollout(s) invalid (isolation)"
        )
    else:
        s.progress.event(f"audit: {len(audit.rows)} rows, no cross submission")
    if audit.forged:
        s.progress.event(
            f"audit: {len(audit.forged)} forged token(s) submitted, "
            f"{audit.scored} rollout(s) scored 0 (forged_token)"
        )
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
    cross and lost ones), make the window's rollouts invalid on a foreign token, and keep
    the environment's own acts for the window's close."""
    ctx = trials.ctx
    started = time.monotonic()
    try:
        judged = sweep_before_wipe(ctx, 0, env)
    except Exception as exc:  # a sweep that could not run saw nothing: lost, never clean
        why = f"{env}'s places could not be swept before its reset: {type(exc).__name__}: {exc}"
        lost = [IsolationRow(SWEEP_TEST, 0, env, env, RowResult.LOST, ctx.window, why)]
        judged = SweepJudgement(lost, [], [], [])
    # What it costs a reset, kept with the other timings of the run.
    ctx.record_latency(SWEEP_TEST, env, (time.monotonic() - started) * 1000, "before wipe")
    trials.own_acts(judged.own_acts)
    trials.wiped(env)
    if not judged.rows and not judged.own_acts and not judged.unread:
        return  # nothing found and nothing unreadable: no trial of its own
    trial = trials.reserve(SWEEP_TEST)
    rows = [replace(r, trial=trial) for r in judged.rows]
    write_wipe_evidence(ctx, env, trial, judged)
    s.store.add_isolation_rows(rows)
    _apply_sweep(s, trials, [judged], f"token sweep before {env}'s reset")


def sweep_window(s: WindowServices, trials: WindowTrials, n: int, why: str) -> list[IsolationRow]:
    """Run the token sweep in the trials' window, make the window's rollouts invalid
    (``isolation``) if it found a token outside its environment, and score 0 the
    rollouts whose own acts the window's sweeps saw; return its rows."""
    ctx = trials.ctx
    before = len(ctx.swept)
    # A battery made for one purpose may leave the sweep out; the window still runs it.
    rows = trials.run_test(s.battery.get(SWEEP_TEST, CHECKS[SWEEP_TEST]), n, why=why)
    judged = ctx.swept[before:]
    for j in judged:
        trials.own_acts(j.own_acts)
    _apply_sweep(s, trials, judged, "token sweep")
    _score_own_acts(s, trials)
    return rows


def _apply_sweep(
    s: WindowServices, trials: WindowTrials, judged: list[SweepJudgement], what: str
) -> None:
    """The window's rollouts made invalid by the sweep's foreign tokens, and said."""
    findings = [f for j in judged for f in j.findings]
    invalidated = apply_sweep(s.store, trials.ctx.window, findings)
    if findings:
        s.progress.event(
            f"[red]{what}: a token outside its environment[/], "
            f"{invalidated} rollout(s) invalid (isolation)"
        )
    unread = [u for j in judged for _, u in j.unread]
    if unread:
        s.progress.event(
            f"{what}: {len(unread)} spot(s) not decoded for a cost bound "
            f"(first: {unread[0].where}: {unread[0].bound})"
        )


def _score_own_acts(s: WindowServices, trials: WindowTrials) -> None:
    """Score 0 every rollout whose environment's own programs the window's sweeps saw
    forge a token or keep a selection silent (each keeps its first such reason)."""
    for act, rollouts in trials.take_acts():
        scored = s.store.mark_agent_fault(
            rollouts, ACT_REASONS[act.kind], f"{SWEEP_TEST}: {act.evidence}"[:1000]
        )
        who = ", ".join(rollouts) or "no rollout of the window"
        s.progress.event(
            f"token sweep: {act.kind} in {'/'.join(act.owners)} ({who}): {scored} scored 0"
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
        # When each environment was last wiped in the window, and the own acts the
        # window's sweeps saw, each with the rollouts that did it (found when it was seen:
        # the next wipe changes who that is).
        self._wiped: dict[str, float] = {}
        self._acts: list[tuple[OwnAct, list[str]]] = []
        # A forged token in a place no wipe clears (a log file) is seen by every later
        # sweep of the window: only the first names who wrote it.
        self._forged_seen: set[tuple[str, str]] = set()

    def wiped(self, env: str) -> None:
        """``env`` is about to be wiped (its places were swept just before)."""
        with self._numbering:
            self._wiped[env] = time.time()

    def own_acts(self, acts: list[OwnAct]) -> None:
        """Keep a sweep's own acts with the rollouts that did them."""
        if not acts:
            return
        window = self.ctx.window
        spans = [
            RolloutSpan(r.rollout_id, r.env, r.started_at, r.ended_at)
            for r in self.s.store.rollouts(window)
        ]
        with self._numbering:
            for act in acts:
                if act.token is not None:
                    key = (str(act.token), act.where)
                    if key in self._forged_seen:
                        continue
                    self._forged_seen.add(key)
                last = self._wiped.get(act.owners[0]) if len(act.owners) == 1 else None
                self._acts.append((act, writing_rollouts(act, spans, last)))

    def take_acts(self) -> list[tuple[OwnAct, list[str]]]:
        """The own acts kept so far (and forget them)."""
        with self._numbering:
            acts, self._acts = self._acts, []
        return acts

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
