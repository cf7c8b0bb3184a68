"""A window's verdict on real parts: a pool, the canary watcher, a verify server, SQLite.

Leaks are planted the way a real one would show: the canary's clipboard is taken from
the harness side, an isolation test cannot read its inputs, a token is delivered
through another environment's lease, and a file holding env01's token is written into
env02's home while a window is open. So are what an agent could do to fail a window
without a leak, which must not: a token of env01's shape that nobody minted in env02's
home, and a CLIPBOARD owner on env02's display that never answers.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import ClassVar

import httpx
import pytest
from rich.console import Console
from Xlib import X
from Xlib import display as xdisplay

from cleanroom.core.canary import CANARY_ENV
from cleanroom.core.isolation import SWEEP_TEST, IsolationRow, RowResult
from cleanroom.core.outcomes import Outcome, Reason, Status
from cleanroom.core.publish import ControlResult, Refusal
from cleanroom.core.tokens import RolloutId, mint
from cleanroom.environments.interface import Started
from cleanroom.environments.leaky_setups import Leak
from cleanroom.environments.policy.handle import LocalHandle
from cleanroom.environments.pool.plan import PoolConfig
from cleanroom.environments.pool.pool import Pool
from cleanroom.environments.x11.clipboard import SELECTION_DEADLINE_S
from cleanroom.harness.form_audit_rows import LeasedRollout
from cleanroom.harness.form_audit_window import audit_window
from cleanroom.harness.loop import end_of_run_sweep
from cleanroom.harness.plan import PlannedCheck
from cleanroom.harness.progress import LoopProgress
from cleanroom.harness.smoke import SmokeRunner
from cleanroom.harness.window import WindowPlan, WindowServices, run_window
from cleanroom.isolation.battery import IsolationCheck, Schedule, TrialContext
from cleanroom.isolation.canary.watcher import CanaryWatcher
from cleanroom.isolation.controls.token_sweep import run_sweep_control
from cleanroom.lifecycle import wait_until
from cleanroom.reports.model import build_report
from cleanroom.rollouts.base import RolloutContext, SmokeTask
from cleanroom.store.rundb import RunStore
from cleanroom.verify_server.process import VerifyServerProcess

from ..conftest import GRAB_SERVER as GRAB

FIRED = ControlResult(2, 2, 5, 10)


class _TakesTheCanaryClipboard(IsolationCheck):
    """Plants a leak: the canary's clipboard changes (from the harness side)."""

    name: ClassVar[str] = "planted_canary_change"
    number: ClassVar[int] = 90
    schedule: ClassVar[Schedule] = Schedule(window=1, soak=1)
    detects: ClassVar[tuple[Leak, ...]] = ()

    def run_trial(self, ctx: TrialContext, trial: int) -> list[IsolationRow]:
        owner = ctx.pool.env(CANARY_ENV).live.clipboard
        assert owner is not None, "the canary has no clipboard owner"
        owner.set(f"leaked {ctx.mint('env01')}", ("CLIPBOARD",))
        return [IsolationRow(self.name, trial, a, b, RowResult.CLEAN, ctx.window)
                for a, b in self.pairs(ctx)]  # fmt: skip


class _ReadsAFileThatIsNotThere(IsolationCheck):
    """A check that cannot read its inputs: every pair it would check is lost."""

    name: ClassVar[str] = "blind_check"
    number: ClassVar[int] = 91
    schedule: ClassVar[Schedule] = Schedule(window=1, soak=1)
    detects: ClassVar[tuple[Leak, ...]] = ()

    def run_trial(self, ctx: TrialContext, trial: int) -> list[IsolationRow]:
        home = Path(ctx.pool.env("env01").account.home)
        (home / "saved-by-a-trial-that-never-ran.odt").read_bytes()
        return []


class _LeavesATokenInAnotherHome(IsolationCheck):
    """Plants leaks while the window is open: a file holding env01's token in env02's
    home, written by hand from the harness side, owned by env02's user, and env01's token
    submitted through a lease of env02."""

    name: ClassVar[str] = "planted_foreign_file"
    number: ClassVar[int] = 92
    schedule: ClassVar[Schedule] = Schedule(window=1, soak=1)
    detects: ClassVar[tuple[Leak, ...]] = ()
    planted: ClassVar[list[Path]] = []

    def run_trial(self, ctx: TrialContext, trial: int) -> list[IsolationRow]:
        account = ctx.pool.env("env02").account
        path = account.home / "Documents" / f"notes-{trial}.txt"
        path.parent.mkdir(exist_ok=True)
        path.write_text(f"copied from next door: {ctx.mint('env01')}\n")
        os.chown(path, account.uid, account.gid)
        self.planted.append(path)
        assert ctx.verify is not None
        lease = ctx.verify.lease(ctx.mint("env02"), env="env02")
        text = str(ctx.mint("env01"))
        httpx.post(lease.form_url, data={"token": text}, timeout=10, trust_env=False)
        return [IsolationRow(self.name, trial, a, b, RowResult.CLEAN, ctx.window)
                for a, b in self.pairs(ctx)]  # fmt: skip


class _LeavesATokenThenTheHomeIsReset(IsolationCheck):
    """A file holding env01's token written by hand into env02's home, then env02 reset
    (as the next rollout's reset would): the reset wipes the home long before the window
    closes."""

    name: ClassVar[str] = "planted_then_wiped"
    number: ClassVar[int] = 93
    schedule: ClassVar[Schedule] = Schedule(window=1, soak=1)
    detects: ClassVar[tuple[Leak, ...]] = ()
    planted: ClassVar[list[Path]] = []

    def run_trial(self, ctx: TrialContext, trial: int) -> list[IsolationRow]:
        account = ctx.pool.env("env02").account
        path = account.home / f"left-behind-{trial}.txt"
        path.write_text(f"copied from next door: {ctx.mint('env01')}\n")
        os.chown(path, account.uid, account.gid)
        self.planted.append(path)
        ctx.pool.reset("env02", why="the next rollout")
        assert not path.exists()  # the reset wiped it: only a sweep before it could see it
        return [IsolationRow(self.name, trial, a, b, RowResult.CLEAN, ctx.window)
                for a, b in self.pairs(ctx)]  # fmt: skip


class _ForgesATokenInItsOwnHome(IsolationCheck):
    """What an agent in env02 could write to fail any window: a string of env01's token's
    shape that the run never minted, in its own home (in upper case, which the sweep
    reads too), written by hand from the harness side and owned by env02's user."""

    name: ClassVar[str] = "planted_forged_token"
    number: ClassVar[int] = 94
    schedule: ClassVar[Schedule] = Schedule(window=1, soak=1)
    detects: ClassVar[tuple[Leak, ...]] = ()
    planted: ClassVar[list[Path]] = []

    def run_trial(self, ctx: TrialContext, trial: int) -> list[IsolationRow]:
        account = ctx.pool.env("env02").account
        path = account.home / f"forged-{trial}.txt"
        path.write_text(f"ENV01 SAYS {f'env01-w{ctx.window:03d}-r0001-00c0ffee'.upper()}\n")
        os.chown(path, account.uid, account.gid)
        self.planted.append(path)
        return [IsolationRow(self.name, trial, a, b, RowResult.CLEAN, ctx.window)
                for a, b in self.pairs(ctx)]  # fmt: skip


class _KeepsTheClipboardSilent(IsolationCheck):
    """What a program in env02 could do to fail any window: take CLIPBOARD on env02's
    display and never answer a read of it (a client of the display that is not the
    harness's own owner, kept open until the test ends)."""

    name: ClassVar[str] = "planted_silent_owner"
    number: ClassVar[int] = 95
    schedule: ClassVar[Schedule] = Schedule(window=1, soak=1)
    detects: ClassVar[tuple[Leak, ...]] = ()
    clients: ClassVar[list[xdisplay.Display]] = []

    def run_trial(self, ctx: TrialContext, trial: int) -> list[IsolationRow]:
        mute = xdisplay.Display(ctx.pool.env("env02").live.display.name)
        self.clients.append(mute)
        window = mute.screen().root.create_window(0, 0, 1, 1, 0, X.CopyFromParent)
        window.set_selection_owner(mute.intern_atom("CLIPBOARD"), X.CurrentTime)
        mute.sync()
        return [IsolationRow(self.name, trial, a, b, RowResult.CLEAN, ctx.window)
                for a, b in self.pairs(ctx)]  # fmt: skip


@pytest.fixture(scope="module")
def live(desktop_stack: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[WindowServices]:
    """A run with a pool (canary + two environments running Writer), its watcher and a
    verify server; windows are run against it one after another."""
    run_dir = tmp_path_factory.mktemp("windows")
    store = RunStore.create(run_dir / "run")
    server = VerifyServerProcess.start(store.run_dir / "verify-server")
    pool = Pool(PoolConfig(envs=2, programs=("writer",)), store.run_dir, store)
    stopping = threading.Event()
    try:
        pool.start()
        canary = CanaryWatcher(LocalHandle(pool, CANARY_ENV), store)
        canary.start()
        verify = server.client(timeout=15.0)
        smoke = SmokeRunner(pool, store, verify, stopping)
        battery: dict[str, IsolationCheck] = {
            t.name: t
            for t in (
                _TakesTheCanaryClipboard(),
                _ReadsAFileThatIsNotThere(),
                _LeavesATokenInAnotherHome(),
                _LeavesATokenThenTheHomeIsReset(),
                _ForgesATokenInItsOwnHome(),
                _KeepsTheClipboardSilent(),
            )
        }
        with LoopProgress(Console(width=120)) as progress:
            yield WindowServices(
                pool, store, verify, canary, smoke, battery, progress, stopping, server.db
            )
        canary.stop()
        verify.close()
    finally:
        pool.stop()
        server.stop()
        store.close()


def test_a_clean_window_sweeps_clean_on_the_isolated_pool(live: WindowServices) -> None:
    # First in the module: later tests leave foreign tokens behind on purpose.
    result = run_window(live, WindowPlan(5, ("writer",), []))
    sweep = [r for r in live.store.isolation_rows(5) if r.test == SWEEP_TEST]
    assert sweep and {r.result for r in sweep} == {RowResult.CLEAN}, sweep
    assert result.status == "closed"
    evidence = json.loads(
        (live.run_dir / "evidence" / SWEEP_TEST / "w005-t000" / "sweep.json").read_text()
    )
    kinds = {p["kind"] for p in evidence["places"]}
    assert {"home", "runtime folder", "clipboard", "log folder"} <= kinds


def test_a_token_arriving_after_the_last_windows_close_fails_that_window(
    live: WindowServices,
) -> None:
    result = run_window(live, WindowPlan(6, (), []))
    assert result.status == "closed"
    account = live.pool.env("env01").account
    late = account.home / "arrived-late.txt"
    late.write_text(f"{result.trials.ctx.mint('env02')}\n")  # a token the run minted
    try:
        swept = end_of_run_sweep(live, result)
    finally:
        late.unlink()
    assert swept.status == "failed" and live.store.window_status(6) == "failed"
    trials = {r.trial for r in live.store.isolation_rows(6) if r.test == SWEEP_TEST}
    assert trials == {0, 1}  # the end-of-run sweep numbers on in the last window


def test_a_window_with_a_canary_event_is_failed_and_the_number_refused(
    live: WindowServices,
) -> None:
    plan = WindowPlan(1, ("writer",), [PlannedCheck("planted_canary_change", 1)])
    result = run_window(live, plan)
    assert result.canary.verdict.flagged
    assert result.status == "failed"
    assert live.store.window_status(1) == "failed"
    live.store.add_control_result(FIRED)
    report = build_report(live.store)
    assert isinstance(report.verdict, Refusal)
    assert 1 in report.verdict.failed_windows
    assert "canary event" in report.verdict.reason


def test_a_window_with_a_lost_row_is_failed_and_the_number_refused(live: WindowServices) -> None:
    plan = WindowPlan(2, (), [PlannedCheck("blind_check", 1)])
    result = run_window(live, plan)
    assert result.verdict.lost == 2  # env01 -> env02 and back
    assert result.status == "failed"
    report = build_report(live.store)
    assert isinstance(report.verdict, Refusal)
    assert 2 in report.verdict.failed_windows
    assert "blind_check" in report.verdict.reason


def test_a_cross_row_from_the_audit_invalidates_the_rollouts_it_names(
    live: WindowServices,
) -> None:
    store, window = live.store, 3
    store.open_window(window)
    tokens = {env: mint(RolloutId(env, window, 1)) for env in ("env01", "env02")}
    leases = {}
    for env, token in tokens.items():
        store.start_rollout(token, "form")
        leases[env] = live.verify.lease(token, env=env)
    # env02's token arrives through env01's lease: what a leak between them would do.
    for text in (str(tokens["env01"]), str(tokens["env02"])):
        httpx.post(leases["env01"].form_url, data={"token": text}, timeout=10, trust_env=False)
    for env, token in tokens.items():
        store.finish_rollout(token.rollout_id, live.verify.verify_form(leases[env]))
    before = {r.env: r.outcome for r in store.rollouts(window)}
    assert before == {"env01": Status.SUCCESS, "env02": Status.FAILURE}

    result = audit_window(
        store, live.verify, window, [LeasedRollout(e, t.rollout_id) for e, t in tokens.items()]
    )

    cross = [r for r in result.rows if r.result is RowResult.CROSS]
    assert [(r.from_env, r.to_env) for r in cross] == [("env02", "env01")]
    after = {r.env: (r.outcome, r.reason) for r in store.rollouts(window)}
    assert after == {
        "env01": (Status.INVALID, Reason.ISOLATION),
        "env02": (Status.INVALID, Reason.ISOLATION),
    }


def test_a_token_left_in_another_environments_home_fails_the_window_and_its_rollouts(
    live: WindowServices,
) -> None:
    plan = WindowPlan(4, ("writer",), [PlannedCheck("planted_foreign_file", 1)])
    try:
        result = run_window(live, plan)
    finally:
        for path in _LeavesATokenInAnotherHome.planted:
            path.unlink(missing_ok=True)
    sweep = [r for r in live.store.isolation_rows(4) if r.test == SWEEP_TEST]
    cross = [r for r in sweep if r.result is RowResult.CROSS and r.to_env == "env02"]
    assert {(r.from_env, r.to_env) for r in cross} == {("env01", "env02")}
    home, submitted = sorted(cross, key=lambda r: "submission" in r.detail)
    assert str(_LeavesATokenInAnotherHome.planted[0].resolve()) in home.detail
    assert "verify server submission" in submitted.detail
    assert not [r for r in sweep if r.result is RowResult.LOST], sweep
    assert result.status == "failed" and live.store.window_status(4) == "failed"
    assert "token sweep" in (result.verdict.failure or "")
    rollouts = live.store.rollouts(4)
    assert rollouts and {(r.outcome, r.reason) for r in rollouts} == {
        (Status.INVALID, Reason.ISOLATION)
    }


def test_a_token_wiped_by_a_reset_mid_window_still_fails_the_window(
    live: WindowServices,
) -> None:
    plan = WindowPlan(7, ("writer",), [PlannedCheck("planted_then_wiped", 1)])
    result = run_window(live, plan)
    sweep = [r for r in live.store.isolation_rows(7) if r.test == SWEEP_TEST]
    # (Earlier tests of the module leave env01's token in the canary's clipboard.)
    cross = [r for r in sweep if r.result is RowResult.CROSS and r.to_env == "env02"]
    assert {r.from_env for r in cross} == {"env01"}, sweep
    assert str(_LeavesATokenThenTheHomeIsReset.planted[0].resolve()) in cross[0].detail
    assert result.status == "failed" and "token sweep" in (result.verdict.failure or "")
    rollouts = live.store.rollouts(7)
    assert rollouts and {(r.outcome, r.reason) for r in rollouts} == {
        (Status.INVALID, Reason.ISOLATION)
    }


def test_the_sweeps_planted_control_fires_on_the_live_pool(live: WindowServices) -> None:
    cell = run_sweep_control(live.pool)
    assert cell.fired, cell.detail
    assert cell.test == SWEEP_TEST and cell.leak.startswith("planted:")
    leftovers = list(live.pool.env("env02").account.home.glob("leaked-*"))
    assert leftovers == []  # the plant is removed afterwards


# Longer than the canary watcher's sampling gap (2 s): one sample of it falls between.
CANARY_SAMPLE_WAIT_S = 5.0


def test_a_forged_token_fails_no_window_and_scores_its_writer_0(live: WindowServices) -> None:
    # Earlier tests of the module leave env01's real token in the canary's clipboard. The
    # watcher samples it between windows: the change of clearing it must be seen before
    # this window opens, or it is this window's canary event.
    live.pool.env(CANARY_ENV).live.clipboard.clear()
    time.sleep(CANARY_SAMPLE_WAIT_S)
    plan = WindowPlan(8, ("writer",), [PlannedCheck("planted_forged_token", 1)])
    try:
        result = run_window(live, plan)
    finally:
        for path in _ForgesATokenInItsOwnHome.planted:
            path.unlink(missing_ok=True)
    sweep = [r for r in live.store.isolation_rows(8) if r.test == SWEEP_TEST]
    assert sweep and {r.result for r in sweep} == {RowResult.CLEAN}, sweep
    assert result.status == "closed", result.verdict.failure
    scored = {r.env: (r.outcome, r.reason) for r in live.store.rollouts(8)}
    assert scored["env02"] == (Status.FAILURE, Reason.FORGED_TOKEN)
    assert scored["env01"][1] is None
    forged = next(r for r in live.store.rollouts(8) if r.env == "env02")
    assert "env01-w008-r0001-00c0ffee" in forged.detail and "any case" in forged.detail


def test_a_silent_clipboard_owner_fails_no_window_and_scores_its_rollout_0(
    live: WindowServices,
) -> None:
    live.pool.env(CANARY_ENV).live.clipboard.clear()
    time.sleep(CANARY_SAMPLE_WAIT_S)
    plan = WindowPlan(9, ("writer",), [PlannedCheck("planted_silent_owner", 1)])
    try:
        result = run_window(live, plan)
    finally:
        for client in _KeepsTheClipboardSilent.clients:
            client.close()
    sweep = [r for r in live.store.isolation_rows(9) if r.test == SWEEP_TEST]
    assert sweep and {r.result for r in sweep} == {RowResult.CLEAN}, sweep
    assert result.status == "closed", result.verdict.failure
    scored = {r.env: (r.outcome, r.reason) for r in live.store.rollouts(9)}
    assert scored["env02"] == (Status.FAILURE, Reason.SELECTION_UNANSWERED)
    assert scored["env01"][1] is None


# The window's close past its rollouts (the audit, the canary's last look, the sweep):
# env01's held clipboard costs the sweep one selection read's deadline, no more (5.2 s
# in all, measured).
CLOSE_WITH_A_GRAB_S = SELECTION_DEADLINE_S + 15


class _GrabsThenShoots(SmokeTask):
    """In env01: a program of its own grabs the display's server and holds it past the
    rollout, then the policy asks for a screenshot. Elsewhere: once env01's server is
    held, a screenshot and a few keys, which must work."""

    name = "grab_then_shoot"
    grabbed = threading.Event()
    grabs: ClassVar[list[tuple[Started, Path]]] = []

    def __init__(self, pool: Pool) -> None:
        self.pool = pool

    def policy(self, ctx: RolloutContext) -> None:
        if ctx.env == "env01":
            argv = [self.pool.python("env01"), "-c", GRAB]
            started, log = self.pool.start_inside("env01", argv, "grab")
            self.grabs.append((started, log))
            assert wait_until(lambda: _says_grabbed(log), 30, 0.05), "the grab never held"
            self.grabbed.set()
        else:
            assert self.grabbed.wait(60), "env01's grab never held"
        ctx.handle.screenshot()
        ctx.handle.type_text("ok")

    def verify(self, ctx: RolloutContext) -> Outcome:
        return Outcome.success()


def _says_grabbed(log: Path) -> bool:
    return log.exists() and "grabbed" in log.read_text(errors="replace")


def test_a_grab_by_an_environments_own_program_scores_its_rollout_0_and_the_window_closes(
    live: WindowServices,
) -> None:
    live.pool.env(CANARY_ENV).live.clipboard.clear()
    time.sleep(CANARY_SAMPLE_WAIT_S)
    ended: list[float] = []
    smoke = SmokeRunner(
        live.pool,
        live.store,
        live.verify,
        live.stopping,
        on_done=lambda record: ended.append(time.monotonic()),
        tasks={_GrabsThenShoots.name: lambda verify: _GrabsThenShoots(live.pool)},
    )
    try:
        result = run_window(
            replace(live, smoke=smoke), WindowPlan(10, (_GrabsThenShoots.name,), [])
        )
        closed = time.monotonic()
        assert len(ended) == 2 and _GrabsThenShoots.grabs
        assert closed - max(ended) < CLOSE_WITH_A_GRAB_S
    finally:
        for started, _ in _GrabsThenShoots.grabs:
            live.pool.end_inside("env01", started)
    sweep = [r for r in live.store.isolation_rows(10) if r.test == SWEEP_TEST]
    assert sweep and {r.result for r in sweep} == {RowResult.CLEAN}, sweep
    assert result.status == "closed", result.verdict.failure
    scored = {r.env: (r.outcome, r.reason) for r in live.store.rollouts(10)}
    assert scored == {
        "env01": (Status.FAILURE, Reason.DISPLAY_HELD),
        "env02": (Status.SUCCESS, None),
    }
