"""OSWorld's own run loop inside a window: `run_single_example`, as OSWorld's runner makes
its calls, drives `RunDesktopEnv` over two environments of a run that serves them to
outside agents, while the window runs its isolation trials, the canary and the token
sweep around the episodes. A scripted agent per environment (one in the pyautogui
space, one in claude_computer_use) solves a real OSWorld task; the window closes clean
with its checks counted and both episodes recorded as its rollouts. A leak the agent
makes during its episode (a neighbour's token written into its home through its VM's
server) fails the window and makes its rollouts invalid.

The run's parts are started in this process as `cleanroom run --tasks osworld-agent`
starts them (`harness.loop.serve_outside_agents`), without the run's positive control
and leaky controls, to keep the test short; the agents' side is what a user's OSWorld
run script does, in threads of the test.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest
from rich.console import Console

from cleanroom.core.canary import CANARY_ENV
from cleanroom.core.isolation import SWEEP_TEST, RowResult
from cleanroom.core.outcomes import Reason, Status
from cleanroom.environments.interface import ScreenSize
from cleanroom.environments.policy.handle import LocalHandle
from cleanroom.environments.pool.plan import PoolConfig
from cleanroom.environments.pool.pool import Pool
from cleanroom.harness.loop import load_battery, serve_outside_agents
from cleanroom.harness.plan import PlannedCheck
from cleanroom.harness.progress import LoopProgress
from cleanroom.harness.settings import OutsideAgentSettings
from cleanroom.harness.smoke import SmokeRunner
from cleanroom.harness.window import WindowPlan, WindowServices, run_window
from cleanroom.isolation.canary.watcher import CanaryWatcher
from cleanroom.lifecycle import wait_until
from cleanroom.rollouts.osworld_outside import OUTSIDE_TASK
from cleanroom.store.rundb import RunStore
from cleanroom.verify_server.process import VerifyServerProcess

from ...docs_examples import doc_block, run_python
from ..osworld_runner import ScriptedAgent, run_single_example
from ..osworld_screen import visible_point

REPO = Path(__file__).resolve().parents[3]
TASK = json.loads(
    (REPO / "tests/data/osworld/tasks/os/e0df059f-28a6-4169-924f-b9623e7184cc.json").read_text()
)
SPACES = {"env01": "pyautogui", "env02": "claude_computer_use"}

pytestmark = pytest.mark.slow


@dataclass
class Run:
    """The run's parts a window uses, and the folder its connection file is in."""

    services: WindowServices
    run_dir: Path


@pytest.fixture(scope="module")
def run(desktop_stack: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    """A run with a pool at OSWorld's screen size (the canary, and two environments with
    a terminal), its canary watcher, a verify server, the real battery, and OSWorld's
    interfaces served to outside agents as `cleanroom run` serves them."""
    store = RunStore.create(tmp_path_factory.mktemp("osworld-runner") / "run")
    server = VerifyServerProcess.start(store.run_dir / "verify-server")
    config = PoolConfig(envs=2, programs=("terminal",), screen=ScreenSize(1920, 1080))
    pool = Pool(config, store.run_dir, store)
    stopping = threading.Event()
    with ExitStack() as stack:
        try:
            pool.start()
            canary = CanaryWatcher(LocalHandle(pool, CANARY_ENV), store)
            canary.sample_once()
            canary.start()
            stack.callback(canary.stop)
            settings = OutsideAgentSettings(wait_s=120, episode_s=120)
            agents, _ = serve_outside_agents(pool, store.run_dir, settings, stopping, stack)
            verify = server.client(timeout=15.0)
            stack.callback(verify.close)
            smoke = SmokeRunner(
                pool,
                store,
                verify,
                stopping,
                tasks={OUTSIDE_TASK: agents.task},
                gates={OUTSIDE_TASK: agents.gate},
            )
            progress = stack.enter_context(LoopProgress(Console(width=120)))
            yield Run(
                WindowServices(
                    pool,
                    store,
                    verify,
                    canary,
                    smoke,
                    load_battery(),
                    progress,
                    stopping,
                    server.db,
                ),
                store.run_dir,
            )
        finally:
            stopping.set()
            stack.close()
            pool.stop()
            server.stop()
            store.close()


class Episode(threading.Thread):
    """One user's OSWorld run script, in a thread: `RunDesktopEnv` over ``env`` of the
    run, and OSWorld's runner with a scripted agent in ``action_space``."""

    def __init__(
        self,
        run: Run,
        env: str,
        action_space: str,
        out: Path,
        before_typing: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__(daemon=True)
        self.the_run, self.env, self.action_space = run, env, action_space
        self.out, self.before_typing = out, before_typing
        self.scores: list[float] = []
        self.details: dict | None = None
        self.error: BaseException | None = None
        out.mkdir(parents=True, exist_ok=True)

    def run(self) -> None:
        try:
            pool = self.the_run.services.pool
            agent = ScriptedAgent(
                self.action_space,
                # What the agent sees on its screen, in the generation of its episode.
                lambda: visible_point(LocalHandle(pool, self.env).windows(), "terminal"),
                before_typing=self.before_typing,
            )
            args = SimpleNamespace(
                sleep_after_execution=1.0,
                max_steps=5,
                cache_dir=str(self.out / "cache"),
                run=str(self.the_run.run_dir),
            )
            self.scores, self.details = documented_run_episode()(
                self.env, self.action_space, agent, TASK, args, str(self.out)
            )
        except BaseException as exc:  # reported by the test
            self.error = exc

    def finished(self) -> None:
        self.join(timeout=120)
        assert not self.is_alive(), f"{self.env}'s episode never ended"
        assert self.error is None, f"{self.env}: {self.error!r}"


def documented_run_episode() -> Callable[..., tuple[list[float], dict | None]]:
    """``run_episode`` as docs/verifiers/osworld-agents.md shows it, with the runner's
    calls (`run_single_example`) standing in for OSWorld's ``lib_run_single``."""
    block = doc_block("docs/verifiers/osworld-agents.md", "OSWorld's runner inside a window", 1)
    sys.modules["lib_run_single"] = SimpleNamespace(run_single_example=run_single_example)  # type: ignore[assignment]
    return run_python(block)["run_episode"]  # type: ignore[no-any-return]


def _episodes(run: Run, out: Path, **before_typing: Callable[[str], None]) -> list[Episode]:
    episodes = [
        Episode(run, env, space, out / env, before_typing.get(env)) for env, space in SPACES.items()
    ]
    for e in episodes:
        e.start()
    return episodes


def test_osworlds_run_loop_solves_a_task_in_each_environment_inside_a_window(
    run: Run, tmp_path: Path
) -> None:
    episodes = _episodes(run, tmp_path)
    result = run_window(
        run.services, WindowPlan(1, (OUTSIDE_TASK,), [PlannedCheck("clipboard", 2)])
    )
    for e in episodes:
        e.finished()

    assert result.status == "closed", result.verdict
    assert [e.scores for e in episodes] == [[1.0], [1.0]]
    for e in episodes:
        assert e.details is not None and (e.details["outcome"], e.details["score"]) == (
            "success",
            1.0,
        )
        assert (e.out / "result.txt").read_text() == "1.0\n"
        recording = (e.out / "recording.mp4").read_bytes()  # OSWorld's name, an animated PNG
        assert recording.startswith(b"\x89PNG") and b"acTL" in recording[:200]
        assert (e.out / "cache" / TASK["id"]).is_dir()
    store = run.services.store
    assert {(r.env, r.task, r.outcome, r.score) for r in store.rollouts(1)} == {
        ("env01", OUTSIDE_TASK, Status.SUCCESS, 1.0),
        ("env02", OUTSIDE_TASK, Status.SUCCESS, 1.0),
    }
    rows = store.isolation_rows(1)
    counted = {t: sum(r.test == t for r in rows) for t in ("clipboard", "canaries", SWEEP_TEST)}
    assert all(counted.values()), counted
    assert not [r for r in rows if r.result is RowResult.CROSS]
    assert store.window_status(1) == "closed"


def test_a_leak_made_during_an_osworld_episode_fails_the_window(run: Run, tmp_path: Path) -> None:
    planted = threading.Event()

    def plant_the_neighbours_token(vm_ip: str) -> None:
        """By hand, through env01's own VM server: env02's rollout's token written into
        env01's home, what a leak between the two would leave."""

        def neighbours() -> str | None:
            found = [r for r in run.services.store.rollouts(2) if r.env == "env02"]
            return found[0].token if found else None

        token = wait_until(neighbours, 60)
        assert token, "env02 has no rollout beside env01's"
        script = f"mkdir -p ~/Documents && echo 'copied: {token}' > ~/Documents/copied.txt"
        with httpx.Client(trust_env=False, timeout=60) as client:
            ran = client.post(
                f"http://{vm_ip}:5000/run_bash_script", json={"script": script, "timeout": 10}
            )
        assert ran.json()["returncode"] == 0, ran.text
        planted.set()

    episodes = _episodes(run, tmp_path, env01=plant_the_neighbours_token)
    result = run_window(
        run.services, WindowPlan(2, (OUTSIDE_TASK,), [PlannedCheck("clipboard", 1)])
    )
    for e in episodes:
        e.finished()

    assert planted.is_set()
    assert result.status == "failed" and run.services.store.window_status(2) == "failed"
    cross = [
        r
        for r in run.services.store.isolation_rows(2)
        if r.test == SWEEP_TEST and r.result is RowResult.CROSS
    ]
    assert {(r.from_env, r.to_env) for r in cross} == {("env02", "env01")}, cross
    # The agents were told what the checker said; the run's record is what counts.
    assert [e.scores for e in episodes] == [[1.0], [1.0]]
    for r in run.services.store.rollouts(2):
        assert (r.task, r.outcome, r.reason) == (OUTSIDE_TASK, Status.INVALID, Reason.ISOLATION), r
