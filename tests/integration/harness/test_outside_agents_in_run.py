"""`cleanroom run --tasks osworld-agent`: agents that run outside the harness drive its
environments through OSWorld's interface over HTTP, each holding only its environment's
key from the run's connection file, while the run opens the window, runs the positive
control, the isolation trials, the canary, the token sweep and its leaky controls around
them. Their episodes are the window's rollouts, scored by cleanroom's checker, and the
published number counts their hours. A leak injected by hand during an episode (one
rollout's token written into the other environment) fails the window and makes its
rollouts invalid."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from cleanroom.core.isolation import SWEEP_TEST, RowResult
from cleanroom.core.outcomes import Reason, Status
from cleanroom.lifecycle import wait_until
from cleanroom.rollouts.osworld_http import OSWorldHTTPEnv, connect
from cleanroom.rollouts.osworld_outside import CONNECTION_FILE, OUTSIDE_TASK
from cleanroom.store.rundb import RunStore

REPO = Path(__file__).resolve().parents[3]
RENAME = json.loads(
    (REPO / "tests/data/osworld/tasks/os/e0df059f-28a6-4169-924f-b9623e7184cc.json").read_text()
)
CLI = Path(sys.executable).with_name("cleanroom")
# The agent's answer to the task, as pyautogui-space code (OSWorld's agents write such
# Python): rename the folder, then a key press as an agent would end with.
SOLVE = (
    "import os; home = os.path.expanduser('~'); "
    "os.rename(f'{home}/Desktop/todo_list_Jan_1', f'{home}/Desktop/todo_list_Jan_2'); "
    "pyautogui.press('shift')"
)

pytestmark = pytest.mark.slow


class Agent(threading.Thread):
    """One outside agent: reads its environment's key from the run's connection file,
    resets with the task (waiting for the run's rollout), acts, and evaluates."""

    def __init__(self, run: Path, env: str, before_done: Any = None) -> None:
        super().__init__(daemon=True)
        self.run_dir, self.env, self.before_done = run, env, before_done
        self.scores: list[float] = []
        self.trees: list[str | None] = []
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            path = self.run_dir / CONNECTION_FILE
            assert wait_until(path.exists, 300), "the run never served the interface"
            client: OSWorldHTTPEnv = connect(path, wait_s=600)[self.env]
            obs = client.reset(task_config=RENAME)
            assert obs["screenshot"][:4] == b"\x89PNG"
            self.trees.append(obs["accessibility_tree"])
            client.step(SOLVE, pause=1.0)
            if self.before_done is not None:
                self.before_done(client)
            client.step("DONE", pause=0)
            self.scores.append(client.evaluate())
        except BaseException as exc:  # reported by the test
            self.error = exc


def _run(run: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [str(CLI), "run", "--envs", "2", "--windows", "1", "--tasks", OUTSIDE_TASK,
         "--tests", "clipboard", "--trials-scale", "0.1", "--agent-wait", "600",
         "--run", str(run), *args],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip


def _finish(proc: subprocess.Popen[str], agents: list[Agent]) -> str:
    out, _ = proc.communicate(timeout=900)
    # The run's own faults (a traceback the interface logged) before its report's end.
    said = out[out.find("Traceback") :][:4000] if "Traceback" in out else out[-4000:]
    for a in agents:
        a.join(timeout=60)
        assert a.error is None, f"{a.env}: {a.error!r}\n{said}"
    return out


# The demo proves its own agents' number next to controls that fired in every run; the
# outside agents' episodes run in every run in the test below.
@pytest.mark.integrations
@pytest.mark.timeout(960)
def test_outside_agents_rollouts_are_counted_next_to_controls_that_fired(
    desktop_stack: None, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    proc = _run(run)
    agents = [Agent(run, "env01"), Agent(run, "env02")]
    for a in agents:
        a.start()
    out = _finish(proc, agents)
    assert proc.returncode in (0, 1), out[-4000:]
    assert [a.scores for a in agents] == [[1.0], [1.0]], out[-4000:]
    # OSWorld's default observation, over HTTP: each environment's accessibility tree.
    assert all(t and t.startswith("<desktop-frame") for a in agents for t in a.trees)
    assert (run / CONNECTION_FILE).stat().st_mode & 0o077 == 0

    with RunStore.open(run, owner=False) as store:
        rollouts = store.rollouts(1)
        assert {(r.env, r.task, r.outcome, r.score) for r in rollouts} == {
            ("env01", OUTSIDE_TASK, Status.SUCCESS, 1.0),
            ("env02", OUTSIDE_TASK, Status.SUCCESS, 1.0),
        }
        assert store.window_status(1) == "closed"
        tests = {r.test for r in store.isolation_rows(1)}
        assert {"clipboard", "canaries", "parked_console", SWEEP_TEST} <= tests

    report = subprocess.run(
        [str(CLI), "report", str(run), "--json"], capture_output=True, text=True, timeout=60
    )
    data = json.loads(report.stdout)
    in_window = [r for r in data["rollouts"] if r["window"] == 1]
    assert sorted((r["env"], r["task"], r["outcome"]) for r in in_window) == [
        ("env01", OUTSIDE_TASK, "success"),
        ("env02", OUTSIDE_TASK, "success"),
    ]
    # The number's environment-hours are its windows' hours, which hold the agents'
    # rollouts.
    assert data["env_hours"] > 0
    controls = data["positive_control"]
    if not (controls and controls[-1]["typing_cross"] and controls[-1]["clipboard_cross"]):
        pytest.skip(f"the positive control did not fire on this machine: {controls}")
    assert data["isolation"]["published"], data["isolation"]


@pytest.mark.timeout(960)
def test_a_leak_injected_during_an_outside_agents_episode_fails_the_window(
    desktop_stack: None, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    proc = _run(run, "--no-leaky-controls", "--no-agent-a11y-tree")
    planted = threading.Event()

    def plant_the_neighbours_token(client: OSWorldHTTPEnv) -> None:
        """By hand: env02's running rollout's token, written into env01's home."""

        def running() -> str | None:
            with RunStore.open(run, owner=False) as store:
                found = [r for r in store.rollouts(1) if r.env == "env02" and not r.finished]
            return found[0].token if found else None

        token = wait_until(running, 120)
        assert token, "env02 has no rollout running beside env01's"
        client.step(
            "import os; p = os.path.expanduser('~/Documents/copied.txt'); "
            f"os.makedirs(os.path.dirname(p), exist_ok=True); open(p, 'w').write({token!r})",
            pause=0.5,
        )
        planted.set()

    leaky = Agent(run, "env01", before_done=plant_the_neighbours_token)
    other = Agent(run, "env02", before_done=lambda client: planted.wait(300))
    agents = [leaky, other]
    for a in agents:
        a.start()
    out = _finish(proc, agents)
    assert planted.is_set(), out[-4000:]
    assert "window 1 failed" in out, out[-4000:]
    with RunStore.open(run, owner=False) as store:
        assert store.window_status(1) == "failed"
        cross = [
            r
            for r in store.isolation_rows(1)
            if r.test == SWEEP_TEST and r.result is RowResult.CROSS
        ]
        assert {(r.from_env, r.to_env) for r in cross} == {("env02", "env01")}, cross
        for r in store.rollouts(1):
            assert (r.task, r.outcome, r.reason) == (
                OUTSIDE_TASK,
                Status.INVALID,
                Reason.ISOLATION,
            ), r
