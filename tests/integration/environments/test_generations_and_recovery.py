"""Generations on real environments: stale actions, reset and crash recovery."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from Xlib import Xatom
from Xlib import display as xdisplay

from cleanroom.core.outcomes import Cause, Outcome, Reason, Status
from cleanroom.core.tokens import RolloutId, mint
from cleanroom.environments.errors import CanaryIsReadOnly, StaleGeneration
from cleanroom.environments.interface import read_action_log
from cleanroom.environments.policy.handle import LocalHandle, PolicyHandle
from cleanroom.environments.pool.environment import DesktopEnvironment
from cleanroom.environments.pool.pool import Pool
from cleanroom.environments.watchdog import Watchdog
from cleanroom.lifecycle import wait_until
from cleanroom.rollouts.base import RolloutContext, SmokeTask
from cleanroom.rollouts.smoke_rollout import attempt_rollout


def test_a_stale_generation_action_is_refused_logged_and_not_applied(pool: Pool) -> None:
    handle = LocalHandle(pool, "env01")
    old = handle.generation
    pool.reset("env01", old)
    with pytest.raises(StaleGeneration):
        pool.act("env01", old, parse_set_clipboard("stale write"))
    assert pool.env("env01").read_clipboard().text != "stale write"
    refused = [
        r
        for r in read_action_log(pool.run_dir / "actions.jsonl")
        if r.env == "env01" and r.outcome == "refused-stale"
    ]
    assert refused and refused[-1].generation == old and refused[-1].kind == "set_clipboard"


def test_reset_returns_a_ready_environment_with_clean_home_and_clipboard(pool: Pool) -> None:
    handle = LocalHandle(pool, "env02")
    env = pool.env("env02")
    (env.account.home / "Desktop" / "left-behind.txt").write_text("x")
    handle.set_clipboard("before reset", ("CLIPBOARD", "PRIMARY"))
    before = handle.generation
    after = handle.reset()
    assert after > before
    assert not (env.account.home / "Desktop" / "left-behind.txt").exists()
    assert handle.clipboard() == {"CLIPBOARD": None, "PRIMARY": None}
    assert not env.problems() and env.window_of("writer") is not None


def _leave_a_dead_bus_address(env: DesktopEnvironment) -> None:
    """What a bus launcher killed before it cleaned up leaves on its display."""
    x = xdisplay.Display(env.live.display.name)
    try:
        atom = x.intern_atom("AT_SPI_BUS")
        dead = f"unix:path={env.spec.runtime_dir}/at-spi/bus_dead,guid={'0' * 32}"
        x.screen().root.change_property(atom, Xatom.STRING, 8, dead.encode())
        x.sync()
    finally:
        x.close()


def _bus_address(env: DesktopEnvironment) -> str:
    x = xdisplay.Display(env.live.display.name)
    try:
        prop = x.screen().root.get_full_property(x.intern_atom("AT_SPI_BUS"), Xatom.STRING)
        return prop.value.decode() if prop else ""
    finally:
        x.close()


def test_a_dead_bus_address_on_the_display_does_not_outlive_a_reset(pool: Pool) -> None:
    env = pool.env("env02")
    _leave_a_dead_bus_address(env)
    pool.reset("env02")
    assert env.remedies == []  # forgotten by the reset itself, not rescued by a retry
    assert "bus_dead" not in _bus_address(env)
    assert env.window_of("writer") is not None


def test_a_writer_that_started_against_a_dead_bus_is_started_again(pool: Pool) -> None:
    env = pool.env("env02")
    with pool.lock("env02"):
        env.restart_session()
        _leave_a_dead_bus_address(env)  # as if the old bus had died after the restart
        env.start_programs(timeout_s=20)
    assert env.remedies == ["a fresh reader", "a fresh Writer"]
    assert "bus_dead" not in _bus_address(env)
    assert any(i["role"] == "paragraph" for i in env.live.atspi.texts())


def test_a_killed_writer_is_recovered_at_a_new_generation(pool: Pool) -> None:
    env = pool.env("env01")
    before = pool.generation("env01")
    writer = next(p for p in env.programs if p.name == "writer")
    pool.inject_fault("env01", "this test kills Writer")
    os.kill(writer.pid, signal.SIGKILL)
    assert wait_until(lambda: not writer.alive(), 5)
    dog = Watchdog(pool)
    assert "env01" in dog.check_once()
    assert pool.generation("env01") > before
    assert not env.problems() and env.window_of("writer") is not None
    # The harness's kill is never the agent's: the rollout it cut short is excluded.
    left_by = pool.gate.book.left_by("env01", before)
    assert left_by is not None and left_by.cause is Cause.INFRASTRUCTURE
    outcome = _rollout(pool, "env01", lambda h: h.type_text("late"), generation=before)
    assert (outcome.status, outcome.reason) == (Status.INVALID, Reason.ENVIRONMENT_ERROR)


def _type_into_writer(handle: PolicyHandle) -> None:
    handle.focus("writer")
    handle.type_text("still here")


class _AgentTask(SmokeTask):
    """A task whose policy is an agent's actions, then one more that needs what they broke."""

    name = "agent"

    def __init__(
        self, acts: Callable[[PolicyHandle], None], then: Callable[[PolicyHandle], None]
    ) -> None:
        self.acts = acts
        self.then = then

    def policy(self, ctx: RolloutContext) -> None:
        self.acts(ctx.handle)
        time.sleep(0.5)
        self.then(ctx.handle)

    def verify(self, ctx: RolloutContext) -> Outcome:
        return Outcome.success()


def _rollout(
    pool: Pool,
    env: str,
    acts: Callable[[PolicyHandle], None],
    generation: int | None = None,
    then: Callable[[PolicyHandle], None] = _type_into_writer,
) -> Outcome:
    handle = LocalHandle(pool, env)
    if generation is not None:
        handle.generation = generation
    token = mint(RolloutId(env, 0, 1))
    ctx = RolloutContext(token, env, handle, pool.run_dir, pool.open_url, lambda: Path("."))
    return attempt_rollout(_AgentTask(acts, then), ctx)


def _quit_writer(handle: PolicyHandle) -> None:
    """Quit Writer, and wait until it is gone: on a loaded machine LibreOffice takes a
    while to exit, and an action sent before then still reaches it."""
    writer = next(p for p in handle.pool.env(handle.env).programs if p.name == "writer")  # type: ignore[attr-defined]
    handle.focus("writer")
    handle.hotkey("ctrl+q")
    assert wait_until(lambda: not writer.alive(), 30), "Writer did not quit on ctrl+q"


def _kill_everything_from_the_terminal(handle: PolicyHandle) -> None:
    handle.focus("terminal")
    time.sleep(0.3)
    handle.type_text("kill -9 -1\n")


def _own_the_clipboard(handle: PolicyHandle) -> None:
    handle.set_clipboard("again")


def _kill_the_harnesss_clipboard_connection(handle: PolicyHandle) -> None:
    """Any client of a display may end another's connection (``KillClient``): the
    harness's clipboard owner's, whose window owns the selection it set."""
    handle.set_clipboard("mine")
    owner = handle.pool.env(handle.env).live.clipboard  # type: ignore[attr-defined]
    handle.focus("terminal")
    time.sleep(0.3)
    handle.type_text(f"xkill -id {owner.window_id}\n")
    time.sleep(1.0)


@pytest.mark.parametrize(
    ("acts", "then"),
    [
        # Ending its own programs: in `make test-integrations`; a broken connection of
        # the harness's (the act that needs the most evidence) in every run.
        pytest.param(_quit_writer, _type_into_writer, id="ctrl+q", marks=pytest.mark.integrations),
        pytest.param(
            _kill_everything_from_the_terminal,
            _type_into_writer,
            id="kill -9 -1",
            marks=pytest.mark.integrations,
        ),
        pytest.param(_kill_the_harnesss_clipboard_connection, _own_the_clipboard, id="xkill"),
    ],
)
def test_an_agent_that_breaks_its_own_desktop_is_scored_zero_not_excluded(
    pool: Pool, acts: Callable[[PolicyHandle], None], then: Callable[[PolicyHandle], None]
) -> None:
    before = pool.generation("env02")
    outcome = _rollout(pool, "env02", acts, then=then)
    assert (outcome.status, outcome.score, outcome.reason) == (
        Status.FAILURE,
        0.0,
        Reason.ENVIRONMENT_BROKEN,
    ), outcome
    # The watchdog brings it back, and a late action of the rollout hears who broke it.
    broken = pool.breakage("env02")
    assert broken is not None and broken.cause is Cause.AGENT
    assert "env02" in Watchdog(pool).check_once()
    with pytest.raises(StaleGeneration) as info:
        LocalHandle(pool, "env02").pool.act("env02", before, parse_set_clipboard("late"))
    assert info.value.left_by is not None and info.value.left_by.cause is Cause.AGENT
    late = _rollout(pool, "env02", lambda h: None, generation=before)
    assert (late.status, late.reason) == (Status.FAILURE, Reason.ENVIRONMENT_BROKEN)
    env = pool.env("env02")
    assert not env.problems() and env.window_of("writer") is not None


def test_the_canary_refuses_every_action(pool: Pool) -> None:
    with pytest.raises(CanaryIsReadOnly):
        LocalHandle(pool, "env00").type_text("anything")


def parse_set_clipboard(text: str):  # type: ignore[no-untyped-def]
    from cleanroom.environments.actions import parse_action

    return parse_action({"kind": "set_clipboard", "text": text})
