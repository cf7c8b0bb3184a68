"""Every bundled OSWorld task that runs end to end offline, through OSWorld's
``DesktopEnv`` interface over a real pool environment: `reset` sets the task up, its
checker gives 0 at t=0 and 0 after a no-op (``DONE``), and 1 after a scripted
``computer_13`` oracle (tests/data/osworld/oracles.json) run after a fresh `reset`.

The oracles do what a user would in a terminal: click a visible point of it and type the
shell command. The tasks that cannot run offline (downloads, GIMP or VS Code, steps or
getters cleanroom lacks) are listed in the same file with the reason."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cleanroom.environments.policy.handle import LocalHandle
from cleanroom.environments.pool.plan import PoolConfig
from cleanroom.environments.pool.pool import Pool
from cleanroom.rollouts.osworld_desktop_env import OSWorldDesktopEnv
from cleanroom.verifiers.osworld.settings import CheckSettings

from ..conftest import require_desktop_stack
from ..osworld_screen import visible_point

REPO = Path(__file__).resolve().parents[3]
TASKS = REPO / "tests/data/osworld/tasks"
ORACLES = json.loads((REPO / "tests/data/osworld/oracles.json").read_text())

pytestmark = [pytest.mark.slow, pytest.mark.beside_desktops]


@pytest.fixture(scope="module")
def one_env_pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pool]:
    """The canary plus one acting environment running Writer and a terminal."""
    require_desktop_stack()
    p = Pool(PoolConfig(envs=1, programs=("writer", "terminal")), tmp_path_factory.mktemp("run"))
    p.start()
    try:
        yield p
    finally:
        p.stop()


@pytest.fixture(scope="module")
def env(one_env_pool: Pool) -> OSWorldDesktopEnv:
    # The pool's displays are 1280x800: the task's placeholders and the actions' bounds.
    return OSWorldDesktopEnv(
        LocalHandle(one_env_pool, "env01"),
        settings=CheckSettings(screen_width=1280, screen_height=800),
        require_a11y_tree=False,
    )


def _click_on(env: OSWorldDesktopEnv, program: str) -> dict[str, Any]:
    x, y = visible_point(env.handle.windows(), program)
    return {"action_type": "CLICK", "x": x, "y": y}


def _concrete(env: OSWorldDesktopEnv, action: dict[str, Any]) -> dict[str, Any]:
    if action["action_type"] == "CLICK" and "on" in action:
        return _click_on(env, action["on"])
    return action


def test_every_bundled_task_has_an_oracle_or_a_reason_it_cannot_run() -> None:
    bundled = {p.stem for p in TASKS.glob("*/*.json")}
    oracles, excluded = set(ORACLES["oracles"]), set(ORACLES["excluded"])
    assert not oracles & excluded
    assert oracles | excluded == bundled
    assert all(ORACLES["excluded"][t]["why"] for t in excluded)


# Two tasks check one gsettings key's value with one exact match, as bedcedc4 checks two
# and e0df059f checks a command's output: `make test` keeps one task of each kind of check
# (an exact match, several, include and exclude, the favourite apps, the sound server);
# these two run in `make test-integrations`.
SAME_KIND_AS_KEPT = {
    "a4d98375-215b-4a4d-aee9-3d4370fccc41",  # screensaver lock-enabled
    "f9be0997-4b7c-45c5-b05c-4612b44a6118",  # notifications show-banners
}


@pytest.mark.parametrize(
    "task_id",
    [
        pytest.param(t, marks=pytest.mark.integrations) if t in SAME_KIND_AS_KEPT else t
        for t in sorted(ORACLES["oracles"])
    ],
    ids=lambda t: t[:8],
)
def test_a_task_fails_at_the_start_and_after_a_no_op_and_passes_after_its_oracle(
    env: OSWorldDesktopEnv, task_id: str
) -> None:
    entry = ORACLES["oracles"][task_id]
    task = json.loads((TASKS / entry["task"]).read_text())
    assert task["id"] == task_id

    env.reset(task_config=task)
    assert env.evaluate() == 0.0  # at t=0
    _, _, done, _ = env.step("DONE", pause=0)
    assert done
    assert env.evaluate() == 0.0  # after the no-op

    env.reset(task_config=task)
    for action in entry["actions"]:
        pause = 1.5 if action["action_type"] == "TYPING" else 0.5
        env.step(_concrete(env, action), pause=pause)
    assert env.evaluate() == 1.0  # after the oracle


def test_the_docs_table_says_what_the_oracles_file_says() -> None:
    page = (REPO / "docs/verifiers/osworld-agents.md").read_text()
    rows = dict(re.findall(r"^\| ([0-9a-f]{8}) \|[^|]+\|[^|]+\| (yes|no) \|", page, re.M))
    assert rows == {
        t[:8]: "yes" if t in ORACLES["oracles"] else "no"
        for t in (*ORACLES["oracles"], *ORACLES["excluded"])
    }
    for task, entry in ORACLES["excluded"].items():
        assert f"| {task[:8]} |" in page and f"| {entry['why']} |" in page, task
    assert f"the {len(ORACLES['oracles'])} that can run offline here" in page
