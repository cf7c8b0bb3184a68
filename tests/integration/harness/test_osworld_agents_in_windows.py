"""Agents inside the windows: a scripted OSWorld-style agent (pyautogui code strings)
drives two pool environments through OSWorld's ``DesktopEnv`` interface, as rollouts of
a window, while the window runs its isolation trials, the canary and the token sweep.
A clean window closes with both rollouts scored by cleanroom's OSWorld checker; a leak
injected by hand during a rollout (one environment's token written into the other's
home) fails the window and makes its rollouts invalid."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from cleanroom.core.canary import CANARY_ENV
from cleanroom.core.isolation import SWEEP_TEST, RowResult
from cleanroom.core.outcomes import Reason, Status
from cleanroom.environments.policy.handle import LocalHandle
from cleanroom.environments.pool.plan import PoolConfig
from cleanroom.environments.pool.pool import Pool
from cleanroom.harness.loop import load_battery
from cleanroom.harness.plan import PlannedCheck
from cleanroom.harness.progress import LoopProgress
from cleanroom.harness.smoke import SmokeRunner
from cleanroom.harness.window import WindowPlan, WindowServices, run_window
from cleanroom.isolation.canary.watcher import CanaryWatcher
from cleanroom.lifecycle import wait_until
from cleanroom.rollouts.osworld_agent import OSWorldAgentTask
from cleanroom.rollouts.osworld_desktop_env import OSWorldDesktopEnv
from cleanroom.store.rundb import RunStore
from cleanroom.verifiers.osworld.settings import CheckSettings
from cleanroom.verify_server.process import VerifyServerProcess

from ..osworld_screen import visible_point

REPO = Path(__file__).resolve().parents[3]
RENAME = json.loads(
    (REPO / "tests/data/osworld/tasks/os/e0df059f-28a6-4169-924f-b9623e7184cc.json").read_text()
)
SETTINGS = CheckSettings(screen_width=1280, screen_height=800)
CLEAN, LEAKY, GARBLED = "osworld-rename", "osworld-rename-leaky", "osworld-rename-garbled"
PLANTED: list[tuple[str, str]] = []  # (whose token, whose home)

pytestmark = pytest.mark.slow


def scripted_agent(leak: bool = False) -> Any:
    """An OSWorld-style agent in the pyautogui space: click the terminal, rename the
    folder, done. With ``leak``, a file holding the other environment's token is written
    by hand into this environment's home in the middle of the rollout."""
    steps: list[int] = []

    def act(obs: dict[str, Any], env: OSWorldDesktopEnv) -> Any:
        steps.append(len(steps))
        if len(steps) == 1:
            x, y = visible_point(env.handle.windows())
            return f"pyautogui.click({x}, {y})"
        if len(steps) == 2:
            if leak:
                _plant_a_neighbours_token(env)
            return (
                "pyautogui.typewrite('mv ~/Desktop/todo_list_Jan_1 ~/Desktop/todo_list_Jan_2'); "
                "pyautogui.press('enter')"
            )
        return "DONE"

    return act


def _plant_a_neighbours_token(env: OSWorldDesktopEnv) -> None:
    """Write the token of the other environment's rollout in the window into this one's
    home, by hand: what a leak between the two would leave."""
    pool = env.handle.pool
    here = env.handle.env
    other = "env02" if here == "env01" else "env01"

    def neighbours() -> str | None:
        # Running or already over (on a loaded machine the other agent may be done): the
        # sweep at the window's close looks for every token of the window's rollouts.
        rollouts = pool.store.rollouts(2)
        return next((r.token for r in rollouts if r.env == other), None)

    token = wait_until(neighbours, 30)
    assert token, f"{other} has no rollout beside {here}'s"
    account = pool.env(here).account
    path = account.home / "Documents" / "copied.txt"
    path.parent.mkdir(exist_ok=True)
    path.write_text(f"copied from next door: {token}\n")
    os.chown(path, account.uid, account.gid)
    PLANTED.append((other, here))


@pytest.fixture(scope="module")
def live(desktop_stack: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[WindowServices]:
    """A run with a pool (canary + two environments with Writer and a terminal), its
    canary watcher, a verify server, the real battery, and the agents' tasks."""
    run_dir = tmp_path_factory.mktemp("agents")
    store = RunStore.create(run_dir / "run")
    server = VerifyServerProcess.start(store.run_dir / "verify-server")
    pool = Pool(PoolConfig(envs=2, programs=("writer", "terminal")), store.run_dir, store)
    stopping = threading.Event()
    tasks = {
        CLEAN: lambda verify: OSWorldAgentTask(
            CLEAN, RENAME, scripted_agent(), settings=SETTINGS, require_a11y_tree=False
        ),
        LEAKY: lambda verify: OSWorldAgentTask(
            LEAKY, RENAME, scripted_agent(leak=True), settings=SETTINGS, require_a11y_tree=False
        ),
        # An agent whose first action is no action at all: its episode ends, and it is
        # scored on the desktop as it left it, never excluded.
        GARBLED: lambda verify: OSWorldAgentTask(
            GARBLED,
            RENAME,
            lambda obs, env: {"action_type": "JUMP"},
            settings=SETTINGS,
            require_a11y_tree=False,
        ),
    }
    try:
        pool.start()
        canary = CanaryWatcher(LocalHandle(pool, CANARY_ENV), store)
        canary.sample_once()
        canary.start()
        verify = server.client(timeout=15.0)
        smoke = SmokeRunner(pool, store, verify, stopping, tasks=tasks)
        with LoopProgress(Console(width=120)) as progress:
            yield WindowServices(
                pool, store, verify, canary, smoke, load_battery(), progress, stopping, server.db
            )
        canary.stop()
        verify.close()
    finally:
        pool.stop()
        server.stop()
        store.close()


def test_agents_drive_two_environments_inside_a_window_with_the_battery_around_them(
    live: WindowServices,
) -> None:
    result = run_window(live, WindowPlan(1, (CLEAN,), [PlannedCheck("clipboard", 2)]))
    assert result.status == "closed", result.verdict
    rollouts = live.store.rollouts(1)
    assert {(r.env, r.task, r.outcome, r.score) for r in rollouts} == {
        ("env01", CLEAN, Status.SUCCESS, 1.0),
        ("env02", CLEAN, Status.SUCCESS, 1.0),
    }
    tests = {r.test for r in live.store.isolation_rows(1)}
    assert {"clipboard", "canaries", SWEEP_TEST} <= tests
    assert live.store.canary_samples(1)


def test_an_agents_malformed_action_is_its_zero_never_an_exclusion(live: WindowServices) -> None:
    # Before the leak's test: what it plants stays in a home until that home's next reset.
    result = run_window(live, WindowPlan(3, (GARBLED,), []))
    assert result.status == "closed", result.verdict
    outcomes = {(r.env, r.outcome, r.score, r.reason) for r in live.store.rollouts(3)}
    assert outcomes == {
        ("env01", Status.FAILURE, 0.0, None),
        ("env02", Status.FAILURE, 0.0, None),
    }
    ended = [v.outcome.details.get("ended", "") for v in live.store.verifier_results()
             if v.rollout_id and "-w003-" in v.rollout_id]  # fmt: skip
    assert len(ended) == 2 and all("ended its episode" in e for e in ended), ended


def test_a_leak_injected_by_hand_during_an_agents_rollout_fails_the_window(
    live: WindowServices,
) -> None:
    # One agent is clean; the other has its neighbour's token written into its home
    # mid-rollout.
    result = run_window(live, WindowPlan(2, (CLEAN, LEAKY), [PlannedCheck("clipboard", 1)]))
    ended = [v.outcome.details.get("ended") for v in live.store.verifier_results()
             if v.rollout_id and "-w002-" in v.rollout_id]  # fmt: skip
    assert PLANTED, f"the leak was never planted: {ended}"
    assert result.status == "failed" and live.store.window_status(2) == "failed"
    cross = [
        r
        for r in live.store.isolation_rows(2)
        if r.test == SWEEP_TEST and r.result is RowResult.CROSS
    ]
    assert PLANTED and cross
    assert {(r.from_env, r.to_env) for r in cross} == set(PLANTED)
    # Whatever the checker said, the window's rollouts cannot be trusted.
    for r in live.store.rollouts(2):
        assert (r.outcome, r.reason) == (Status.INVALID, Reason.ISOLATION), r
