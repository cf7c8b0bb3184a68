"""A program of one environment that grabs its display's server: the harness's read of
that environment's clipboard, a screenshot of it or input to it ends by its deadline as
the environment's own act (its rollout's 0 with ``display_held``), and every other
environment reads, acts and scores as before."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from cleanroom.core.outcomes import Outcome, Reason, Status
from cleanroom.core.tokens import RolloutId, mint
from cleanroom.environments.errors import DisplayHeld
from cleanroom.environments.interface import Screenshot
from cleanroom.environments.policy.handle import LocalHandle, PolicyHandle
from cleanroom.environments.pool.plan import PoolConfig
from cleanroom.environments.pool.pool import Pool
from cleanroom.environments.x11.clipboard import SELECTION_DEADLINE_S
from cleanroom.environments.x11.deadline import PROBE_DEADLINE_S, X_REQUEST_DEADLINE_S
from cleanroom.environments.x11.screen import SCREENSHOT_DEADLINE_S
from cleanroom.lifecycle import wait_until
from cleanroom.rollouts.base import RolloutContext, SmokeTask
from cleanroom.rollouts.smoke_rollout import attempt_rollout

from ..conftest import GRAB_SERVER as GRAB
from ..conftest import require_desktop_stack


@pytest.fixture(scope="module")
def pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pool]:
    require_desktop_stack()
    p = Pool(PoolConfig(envs=2, programs=("terminal",)), tmp_path_factory.mktemp("grab-run"))
    p.start()
    try:
        yield p
    finally:
        p.stop()


def test_a_grab_in_one_environment_is_its_own_act_and_leaves_the_other_readable(
    pool: Pool,
) -> None:
    started, log = pool.start_inside("env01", [pool.python("env01"), "-c", GRAB], "grab")
    try:
        assert wait_until(lambda: _says(log, "grabbed"), 20, 0.05), _tail(log)
        begun = time.monotonic()
        with pytest.raises(DisplayHeld):
            pool.read_selection("env01", "CLIPBOARD")
        assert time.monotonic() - begun < SELECTION_DEADLINE_S + 3
        begun = time.monotonic()
        pool.read_selection("env02", "CLIPBOARD")  # answers, whatever it holds
        assert time.monotonic() - begun < 2
    finally:
        pool.end_inside("env01", started)
    # The grab ends with its program, and the environment reads again.
    assert wait_until(lambda: _reads(pool, "env01"), 10, 0.2)


def test_the_harnesss_own_looks_at_a_held_display_end_by_their_deadlines_as_its_act(
    pool: Pool,
) -> None:
    # What isolation checks read of every environment: its windows with their owners,
    # and its pixels.
    started, log = pool.start_inside("env01", [pool.python("env01"), "-c", GRAB], "grab")
    try:
        assert wait_until(lambda: _says(log, "grabbed"), 20, 0.05), _tail(log)
        for look, bound_s in (
            (pool.displayed_windows, X_REQUEST_DEADLINE_S + 3),
            (pool.pixels, HELD_SCREENSHOT_S),
        ):
            begun = time.monotonic()
            with pytest.raises(DisplayHeld):
                look("env01")
            assert time.monotonic() - begun < bound_s, look
            begun = time.monotonic()
            look("env02")
            assert time.monotonic() - begun < 2, look
    finally:
        pool.end_inside("env01", started)


class _Steps(SmokeTask):
    """A rollout whose policy is one step on its handle; with ``grab``, a program of its
    environment grabs the display's server first and holds it until the rollout ends.
    ``grabbed`` is set once it holds it (or once the step ran, without a grab)."""

    name = "steps"

    def __init__(self, pool: Pool, step: Callable[[PolicyHandle], object], *, grab: bool) -> None:
        self.pool = pool
        self.step = step
        self.grab = grab
        self.grabbed = threading.Event()
        self.started: object = None
        self.log: Path | None = None

    def policy(self, ctx: RolloutContext) -> None:
        if self.grab:
            argv = [self.pool.python(ctx.env), "-c", GRAB]
            self.started, self.log = self.pool.start_inside(ctx.env, argv, "grab")
            assert wait_until(lambda: _says(self.log, "grabbed"), 20, 0.05), _tail(self.log)
            self.grabbed.set()
        self.step(ctx.handle)

    def verify(self, ctx: RolloutContext) -> Outcome:
        return Outcome.success()

    def teardown(self, ctx: RolloutContext) -> None:
        if self.started is not None:
            self.pool.end_inside(ctx.env, self.started)  # type: ignore[arg-type]


def _rollout(pool: Pool, env: str, task: SmokeTask, n: int) -> Outcome:
    token = mint(RolloutId(env, 0, n))
    ctx = RolloutContext(
        token, env, LocalHandle(pool, env), pool.run_dir, pool.open_url, lambda: Path(".")
    )
    return attempt_rollout(task, ctx)


def _screenshot(handle: PolicyHandle) -> object:
    return handle.screenshot()


def _typing(handle: PolicyHandle) -> object:
    handle.type_text("ok")
    return None


# How long a held step may take: its deadline (a screenshot's is followed by a probe of
# the server on a fresh connection), and a margin.
HELD_SCREENSHOT_S = SCREENSHOT_DEADLINE_S + PROBE_DEADLINE_S + 3
HELD_INPUT_S = X_REQUEST_DEADLINE_S + 3


@pytest.mark.parametrize(
    ("step", "bound_s"),
    [(_screenshot, HELD_SCREENSHOT_S), (_typing, HELD_INPUT_S)],
    ids=["screenshot", "input"],
)
def test_a_grab_by_its_own_program_during_a_step_is_the_rollouts_0_and_no_one_elses(
    pool: Pool, step: Callable[[PolicyHandle], object], bound_s: float
) -> None:
    mine = _Steps(pool, step, grab=True)
    theirs = _Steps(pool, lambda h: (_screenshot(h), _typing(h)), grab=False)
    with ThreadPoolExecutor(1) as ex:
        held = ex.submit(_rollout, pool, "env01", mine, 1)
        assert mine.grabbed.wait(30)
        begun = time.monotonic()
        other = _rollout(pool, "env02", theirs, 1)  # while env01's server is held
        assert time.monotonic() - begun < 5
        outcome = held.result(timeout=60)
    assert time.monotonic() - begun < bound_s
    assert (outcome.status, outcome.score, outcome.reason) == (
        Status.FAILURE,
        0.0,
        Reason.DISPLAY_HELD,
    ), outcome
    assert outcome.details["server_pid"] is not None and outcome.details["unread"] > 0
    assert other.status is Status.SUCCESS, other
    # The reset before env01's next rollout leaves it whole, whatever the deadline shut.
    pool.reset("env01")
    assert pool.health("env01") == []
    assert pool.observe("env01", pool.generation("env01"), Screenshot).png


def _says(log: Path, word: str) -> bool:
    return log.exists() and word in log.read_text(errors="replace")


def _tail(log: Path) -> str:
    return log.read_text(errors="replace")[-500:] if log.exists() else "(no log)"


def _reads(pool: Pool, env: str) -> bool:
    try:
        pool.read_selection(env, "CLIPBOARD")
    except DisplayHeld:
        return False
    return True
