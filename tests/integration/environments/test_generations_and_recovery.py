"""Generations on real environments: stale actions, reset and crash recovery."""

from __future__ import annotations

import os
import signal

import pytest
from Xlib import Xatom
from Xlib import display as xdisplay

from cleanroom.environments.errors import CanaryIsReadOnly, StaleGeneration
from cleanroom.environments.policy.handle import LocalHandle
from cleanroom.environments.pool.environment import DesktopEnvironment
from cleanroom.environments.pool.generations import read_action_log
from cleanroom.environments.pool.pool import Pool
from cleanroom.environments.pool.watchdog import Watchdog
from cleanroom.lifecycle import wait_until


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
    x = xdisplay.Display(env.display.name if env.display else "")
    try:
        atom = x.intern_atom("AT_SPI_BUS")
        dead = f"unix:path={env.spec.runtime_dir}/at-spi/bus_dead,guid={'0' * 32}"
        x.screen().root.change_property(atom, Xatom.STRING, 8, dead.encode())
        x.sync()
    finally:
        x.close()


def _bus_address(env: DesktopEnvironment) -> str:
    x = xdisplay.Display(env.display.name if env.display else "")
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
    assert env.atspi is not None
    assert any(i["role"] == "paragraph" for i in env.atspi.texts())


def test_a_killed_writer_is_recovered_at_a_new_generation(pool: Pool) -> None:
    env = pool.env("env01")
    before = pool.generation("env01")
    writer = next(p for p in env.programs if p.name == "writer")
    os.kill(writer.pid, signal.SIGKILL)
    assert wait_until(lambda: not writer.alive(), 5)
    dog = Watchdog(pool)
    assert "env01" in dog.check_once()
    assert pool.generation("env01") > before
    assert not env.problems() and env.window_of("writer") is not None


def test_the_canary_refuses_every_action(pool: Pool) -> None:
    with pytest.raises(CanaryIsReadOnly):
        LocalHandle(pool, "env00").type_text("anything")


def parse_set_clipboard(text: str):  # type: ignore[no-untyped-def]
    from cleanroom.environments.policy.actions import parse_action

    return parse_action({"kind": "set_clipboard", "text": text})
