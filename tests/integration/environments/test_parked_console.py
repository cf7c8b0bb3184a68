"""The parked console on a real pool: started as env00's account in its sandbox, clean
while nothing touches it, and a foreign token typed into it is an event attributed to
its environment (both in a window and in the console's own control)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cleanroom.core.canary import PARKED_CONSOLE_TEST
from cleanroom.core.isolation import RowResult
from cleanroom.core.tokens import RolloutId, mint
from cleanroom.environments.policy.handle import LocalHandle
from cleanroom.environments.pool.plan import PoolConfig
from cleanroom.environments.pool.pool import Pool
from cleanroom.isolation.canary.parked_console import ParkedConsole
from cleanroom.isolation.canary.watcher import PARKED_CONSOLE, CanaryWatcher, apply_watch
from cleanroom.isolation.controls.canary import run_console_control
from cleanroom.lifecycle import wait_until
from cleanroom.store.rundb import RunStore

from .conftest import require_desktop_stack


@pytest.fixture(scope="module")
def terminals(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Pool, RunStore]]:
    """The canary and one environment, each running only a terminal (quick to start)."""
    require_desktop_stack()
    run_dir = tmp_path_factory.mktemp("parked")
    store = RunStore.create(run_dir)
    pool = Pool(
        PoolConfig(envs=1, programs=("terminal",), canary_programs=("terminal",)), run_dir, store
    )
    try:
        pool.start()
        yield pool, store
    finally:
        pool.stop()
        store.close()


def test_a_token_typed_into_the_parked_console_is_an_event_attributed_to_its_env(
    terminals: tuple[Pool, RunStore], tmp_path: Path
) -> None:
    pool, store = terminals
    console = ParkedConsole.start(pool)
    try:
        assert console.socket.stat().st_uid == pool.env("env00").account.uid  # its account
        watcher = CanaryWatcher(LocalHandle(pool, "env00"), store, console=console)
        watcher.sample_once()  # the baseline, before the window
        store.open_window(1)
        for _ in range(3):
            watcher.sample_once()
        clean = store.console_samples(window=1)
        console.send_text(f"leaked {mint(RolloutId('env01', 1, 7))}")  # the leak, wired in
        watcher.sample_once()
        store.close_window(1)
        applied = apply_watch(PARKED_CONSOLE, store, 1)
        rows = [r for r in store.isolation_rows(1) if r.test == PARKED_CONSOLE_TEST]
    finally:
        console.stop()
    assert len(clean) == 3 and all(s.ok for s in clean)
    assert len({s.state for s in clean}) == 1  # an idle prompt holds still
    assert applied.verdict.flagged and applied.verdict.changes[0].endswith("pane text changed")
    cross = [r for r in rows if r.result is RowResult.CROSS]
    assert [(r.from_env, r.to_env) for r in cross] == [("env01", "env00")]
    assert not any(r.result is RowResult.LOST for r in rows)


def test_the_parked_consoles_own_control_fires_and_names_the_source(
    terminals: tuple[Pool, RunStore],
) -> None:
    pool, _ = terminals
    console = ParkedConsole.start(pool)
    try:
        before = console.read()
        cell = run_console_control(console, source_env="env01")
        # The shell erases the typed line a moment after the key.
        erased = wait_until(lambda: console.read() == before, 5, 0.1)
    finally:
        console.stop()
    assert cell.test == PARKED_CONSOLE_TEST and cell.fired, cell.detail
    assert "env01" in cell.detail and cell.cross >= 1
    assert erased  # the typed line was erased again


def test_after_env00_is_recovered_the_console_is_started_again_and_that_look_is_lost(
    terminals: tuple[Pool, RunStore],
) -> None:
    pool, _ = terminals
    console = ParkedConsole.start(pool)
    try:
        before = console.sample(None)
        pool.recover("env00", "a recovery by the watchdog, wired in")
        during = console.sample(None)  # the old tmux server went with env00's sandbox
        after = console.sample(None)
    finally:
        console.stop()
    assert before.ok and after.ok and after.state == before.state
    assert not during.ok and "recovered" in during.detail
