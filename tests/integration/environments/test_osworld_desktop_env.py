"""OSWorld's ``DesktopEnv`` interface over a real pool environment: a real OSWorld task
(rename a folder, tests/data/osworld) set up by `reset`, driven by a scripted
``computer_13`` agent and by a scripted ``pyautogui`` one, and evaluated by cleanroom's
checker: 0 at t=0 and after a no-op, 1 after the oracle; FAIL on a feasible task is 0;
an action the policy API cannot do is refused by name; a reset is a new generation, and
code aimed at the one before is refused."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from cleanroom.environments.errors import StaleGeneration
from cleanroom.environments.policy.handle import LocalHandle
from cleanroom.environments.pool.pool import Pool
from cleanroom.rollouts import osworld_desktop_env
from cleanroom.rollouts.osworld_desktop_env import OSWorldDesktopEnv
from cleanroom.verifiers.osworld.settings import CheckSettings

from ..osworld_screen import visible_point

REPO = Path(__file__).resolve().parents[3]
RENAME = REPO / "tests/data/osworld/tasks/os/e0df059f-28a6-4169-924f-b9623e7184cc.json"
PNG = b"\x89PNG\r\n\x1a\n"

pytestmark = [pytest.mark.slow, pytest.mark.beside_desktops]


def _env(pool: Pool) -> OSWorldDesktopEnv:
    # The pool's displays are 1280x800: the task's placeholders and the actions' bounds.
    return OSWorldDesktopEnv(
        LocalHandle(pool, "env02"),
        settings=CheckSettings(screen_width=1280, screen_height=800),
        require_a11y_tree=False,
    )


def _click_on_the_terminal(env: OSWorldDesktopEnv) -> dict[str, Any]:
    x, y = visible_point(env.handle.windows())
    return {"action_type": "CLICK", "x": x, "y": y}


# Every run holds the same task failing at the start and passing after the work in the
# pyautogui test below, and each bundled task's three runs in its own module.
@pytest.mark.integrations
def test_a_real_task_fails_at_the_start_and_after_a_no_op_and_passes_after_the_oracle(
    pool: Pool,
) -> None:
    task = json.loads(RENAME.read_text())
    env = _env(pool)
    before = env.handle.generation
    obs = env.reset(task_config=task)
    assert env.handle.generation > before  # a cleanroom reset: a new generation
    assert obs["screenshot"].startswith(PNG) and obs["instruction"] == task["instruction"]
    assert obs["accessibility_tree"] is None and obs["terminal"] is None
    assert env.evaluate() == 0.0  # at t=0

    _, reward, done, info = env.step("WAIT", pause=0)
    assert (reward, done, info) == (0.0, False, {})
    _, _, done, info = env.step("DONE", pause=0)
    assert done and info == {"done": True}
    assert env.evaluate() == 0.0  # after the no-op

    env.reset(task_config=task)
    env.step(_click_on_the_terminal(env), pause=0.5)
    rename = "mv ~/Desktop/todo_list_Jan_1 ~/Desktop/todo_list_Jan_2\n"
    env.step({"action_type": "TYPING", "text": rename}, pause=1.5)
    assert env.evaluate() == 1.0  # after the oracle
    # Giving up on a feasible task is its 0, whatever the desktop shows.
    _, _, done, info = env.step({"action_type": "FAIL"}, pause=0)
    assert done and info == {"fail": True}
    assert env.evaluate() == 0.0


def test_pointer_actions_the_policy_api_lacks_run_as_osworlds_controller_runs_them(
    pool: Pool,
) -> None:
    """A held button, a drag, the wheel and a click where the pointer is: the pyautogui
    calls OSWorld's controller sends, run in the environment; the pointer ends where the
    drag took it."""
    env = _env(pool)
    env.reset()
    x, y = visible_point(env.handle.windows())
    for action in (
        {"action_type": "MOVE_TO", "x": x, "y": y},
        {"action_type": "CLICK"},
        {"action_type": "MOUSE_DOWN", "button": "left"},
        {"action_type": "MOUSE_UP", "button": "left"},
        {"action_type": "SCROLL", "dx": 0, "dy": -2},
        {"action_type": "DRAG_TO", "x": x + 5, "y": y + 7},
    ):
        env.step(action, pause=0)
    # MOVE_TO went through the policy API; the rest ran as code (SCROLL as two calls).
    assert [r.exit_code for r in env.code_results] == [0] * 6, env.code_results
    where = OSWorldDesktopEnv(env.handle, action_space="pyautogui", require_a11y_tree=False)
    where.step("print(tuple(pyautogui.position()))", pause=0)
    assert where.code_results[-1].stdout.decode().strip() == f"({x + 5}, {y + 7})"
    # A pointer action aimed at a generation the environment has left never runs.
    env.handle.generation -= 1
    with pytest.raises(StaleGeneration):
        env.step({"action_type": "SCROLL", "dx": 0, "dy": 1}, pause=0)
    env.handle.generation += 1


def test_pyautogui_code_runs_in_the_environment_as_osworlds_server_runs_it(pool: Pool) -> None:
    """A scripted OSWorld-style agent in the pyautogui space: code strings, run with
    OSWorld's prefix inside the environment's sandbox, on its display."""
    task = json.loads(RENAME.read_text())
    env = OSWorldDesktopEnv(
        LocalHandle(pool, "env02"),
        action_space="pyautogui",
        settings=CheckSettings(screen_width=1280, screen_height=800),
    )
    obs = env.reset(task_config=task)
    # OSWorld's default observation: the environment's own accessibility tree, in its XML.
    tree = obs["accessibility_tree"]
    assert tree.startswith("<desktop-frame") and 'xmlns:st="' in tree
    assert "LibreOffice Writer" in tree
    assert env.evaluate() == 0.0
    click = _click_on_the_terminal(env)
    env.step(f"pyautogui.click({click['x']}, {click['y']})", pause=0.5)
    env.step(
        "pyautogui.typewrite('mv ~/Desktop/todo_list_Jan_1 ~/Desktop/todo_list_Jan_2'); "
        "pyautogui.press('enter')",
        pause=1.5,
    )
    assert [r.exit_code for r in env.code_results] == [0, 0], env.code_results
    _, _, done, _ = env.step("DONE", pause=0)
    assert done and env.evaluate() == 1.0
    # Code aimed at a generation the environment has left is refused, and never runs.
    stale = OSWorldDesktopEnv(env.handle, action_space="pyautogui")
    env.reset()
    stale.handle.generation -= 1
    with pytest.raises(StaleGeneration):
        stale.step("pyautogui.press('a')", pause=0)
    stale.handle.generation += 1


def test_an_agents_code_past_its_limit_is_killed_and_its_episode_goes_on(
    pool: Pool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Code of the agent's that runs too long is the agent's doing: it is killed and kept
    as timed out, the step returns, and the environment takes the next action; nothing
    is raised that would make the rollout the harness's fault."""
    monkeypatch.setattr(osworld_desktop_env, "CODE_TIMEOUT_S", 2.0)
    env = OSWorldDesktopEnv(
        LocalHandle(pool, "env02"), action_space="pyautogui", require_a11y_tree=False
    )
    env.begin(None)
    started = time.monotonic()
    obs, _, done, _ = env.step("time.sleep(60)", pause=0)
    assert time.monotonic() - started < 30 and not done and obs["screenshot"]
    assert env.code_results[-1].timed_out and env.code_results[-1].exit_code is None
    env.step("print('after')", pause=0)
    assert env.code_results[-1].stdout.decode().strip() == "after"
