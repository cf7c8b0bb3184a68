"""OSWorld's run loop over a pool environment, through `osworld_provider.DesktopEnv`
constructed with OSWorld's arguments at OSWorld's screen size (1920x1080).

`run_single_example` below makes the calls OSWorld's runner (``lib_run_single``) makes,
in its order: ``env.reset(task_config=...)``, ``agent.reset(logger, vm_ip=env.vm_ip)``,
``env._get_obs()``, ``env.controller.start_recording()``, ``agent.predict`` and
``env.step`` per action until ``done``, ``env.evaluate()``, and
``env.controller.end_recording(path)``. A scripted agent per action space solves a real
task (rename a folder on the Desktop in the terminal); the agent also reaches its
environment as OSWorld's agents reach their VM, at ``http://{vm_ip}:5000``.
"""

from __future__ import annotations

import datetime
import json
import logging
import os
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest

from cleanroom.environments.interface import ScreenSize, status_of
from cleanroom.environments.pool.plan import PoolConfig
from cleanroom.environments.pool.pool import Pool
from cleanroom.rollouts.osworld_provider import DesktopEnv, UnsupportedArgument

from ..conftest import require_desktop_stack
from ..osworld_screen import visible_point

REPO = Path(__file__).resolve().parents[3]
TASK = json.loads(
    (REPO / "tests/data/osworld/tasks/os/e0df059f-28a6-4169-924f-b9623e7184cc.json").read_text()
)
RENAME = "mv ~/Desktop/todo_list_Jan_1 ~/Desktop/todo_list_Jan_2"
SPACES = ("pyautogui", "claude_computer_use", "autoglm_computer_use")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pool]:
    """The canary and two environments with a terminal each, at OSWorld's screen size."""
    require_desktop_stack(("Xvfb", "xauth", "dbus-daemon", "xterm", "useradd"))
    config = PoolConfig(envs=2, programs=("terminal",), screen=ScreenSize(1920, 1080))
    p = Pool(config, tmp_path_factory.mktemp("run"))
    p.start()
    try:
        yield p
    finally:
        p.stop()


def _desktop_env(pool: Pool, env: str, action_space: str) -> DesktopEnv:
    # As OSWorld's run scripts construct it, with the pool it is in.
    return DesktopEnv(
        cache_dir=str(pool.run_dir / "osworld-cache"),
        provider_name="cleanroom",
        path_to_vm=env,
        action_space=action_space,
        screen_size=(1920, 1080),
        headless=True,
        os_type="Ubuntu",
        require_a11y_tree=True,
        region="us-east-1",
        pool=pool,
    )


@pytest.fixture
def env01(pool: Pool, request: pytest.FixtureRequest) -> Iterator[DesktopEnv]:
    env = _desktop_env(pool, "env01", getattr(request, "param", "pyautogui"))
    try:
        yield env
    finally:
        env.close()


def run_single_example(
    agent: Any,
    env: Any,
    example: dict[str, Any],
    max_steps: int,
    instruction: str,
    args: Any,
    example_result_dir: str,
    scores: list[float],
) -> None:
    """OSWorld's runner's calls, in its order (its waits for a VM to settle left out)."""
    runtime_logger = logging.getLogger(f"desktopenv.example.{example['id']}")
    env.reset(task_config=example)
    try:
        agent.reset(runtime_logger, vm_ip=env.vm_ip)
    except Exception:
        agent.reset(vm_ip=env.vm_ip)
    obs = env._get_obs()
    done = False
    step_idx = 0
    env.controller.start_recording()
    while not done and step_idx < max_steps:
        response, actions = agent.predict(instruction, obs)
        for action in actions:
            stamp = datetime.datetime.now().strftime("%Y%m%d@%H%M%S%f")
            obs, reward, done, info = env.step(action, args.sleep_after_execution)
            with open(
                os.path.join(example_result_dir, f"step_{step_idx + 1}_{stamp}.png"), "wb"
            ) as f:
                f.write(obs["screenshot"])
            with open(os.path.join(example_result_dir, "traj.jsonl"), "a") as f:
                entry = {"step_num": step_idx + 1, "response": response, "action": action}
                f.write(json.dumps({**entry, "reward": reward, "done": done, "info": info}) + "\n")
            if done:
                break
        step_idx += 1
    result = env.evaluate()
    scores.append(result)
    with open(os.path.join(example_result_dir, "result.txt"), "w", encoding="utf-8") as f:
        f.write(f"{result}\n")
    env.controller.end_recording(os.path.join(example_result_dir, "recording.mp4"))


class ScriptedAgent:
    """Clicks the terminal, types the rename and Enter, then says DONE, each action in
    its space's form. It learns its screen from its VM's server, as OSWorld's agents
    that build their own client from ``vm_ip`` do."""

    def __init__(self, action_space: str, terminal: Any) -> None:
        self.action_space = action_space
        self.terminal = terminal  # where the terminal can be clicked, read when asked
        self.vm_ip: str | None = None
        self.screen: dict[str, int] | None = None
        self.turn = 0

    def reset(self, _logger: Any = None, vm_ip: str | None = None, **_: Any) -> None:
        self.vm_ip = vm_ip
        self.turn = 0
        with httpx.Client(trust_env=False) as client:
            self.screen = client.post(f"http://{vm_ip}:5000/screen_size").json()

    def predict(self, instruction: str, obs: dict[str, Any]) -> tuple[dict[str, Any], list[Any]]:
        assert obs["screenshot"].startswith(b"\x89PNG")
        self.turn += 1
        if self.turn == 1:
            x, y = self.terminal()
            return {}, [self._click(x, y)]
        if self.turn == 2:
            return {}, [self._type(RENAME)]
        return {}, ["DONE"]

    def _click(self, x: int, y: int) -> Any:
        code = f"pyautogui.click({x}, {y})"
        if self.action_space == "claude_computer_use":
            return {
                "name": "computer",
                "input": {"action": "left_click", "coordinate": [x, y]},
                "id": "toolu_01",
                "action_type": "tool_use",
                "command": code + "\n",
            }
        return code

    def _type(self, text: str) -> Any:
        if self.action_space == "claude_computer_use":
            return {
                "name": "computer",
                "input": {"action": "type", "text": text + "\n"},
                "id": "toolu_02",
                "action_type": "tool_use",
                "command": f'pyautogui.typewrite("""{text}\n""", interval=0.01)\n',
            }
        if self.action_space == "autoglm_computer_use":
            return f"pyautogui.typewrite({text!r})\npyautogui.press('enter')"
        return f"pyautogui.typewrite({text!r}); pyautogui.press('enter')"


@pytest.mark.parametrize("env01", SPACES, indirect=True)
def test_osworlds_run_loop_solves_a_task_in_each_code_space(
    env01: DesktopEnv, tmp_path: Path
) -> None:
    agent = ScriptedAgent(
        env01.action_space, lambda: visible_point(env01.handle.windows(), "terminal")
    )
    scores: list[float] = []
    args = SimpleNamespace(sleep_after_execution=1.0)

    run_single_example(agent, env01, TASK, 5, TASK["instruction"], args, str(tmp_path), scores)

    assert scores == [1.0]
    assert (tmp_path / "result.txt").read_text() == "1.0\n"
    assert agent.screen == {"width": 1920, "height": 1080}
    assert env01.last_eval_details is not None
    assert env01.last_eval_details["outcome"] == "success"
    assert env01.last_eval_details["score"] == 1.0
    recording = (tmp_path / "recording.mp4").read_bytes()
    assert recording.startswith(b"\x89PNG") and b"acTL" in recording[:200]
    assert len(list(tmp_path.glob("step_*.png"))) == 3
    assert env01.cache_dir is not None and Path(env01.cache_dir).name == TASK["id"]
    assert env01.vm_platform == "Linux"


def test_vm_ip_reaches_its_own_environment_as_its_user(pool: Pool, env01: DesktopEnv) -> None:
    user = status_of(pool, "env01")["user"]
    with httpx.Client(trust_env=False, timeout=60) as client:
        shot = client.get(f"http://{env01.vm_ip}:5000/screenshot")
        ran = client.post(
            f"http://{env01.vm_ip}:5000/execute", json={"command": ["whoami"], "shell": False}
        )
    assert shot.status_code == 200 and shot.content.startswith(b"\x89PNG")
    assert ran.json()["returncode"] == 0 and ran.json()["output"].strip() == user


def test_another_environments_key_or_none_does_not_open_it(pool: Pool, env01: DesktopEnv) -> None:
    env02 = _desktop_env(pool, "env02", "pyautogui")
    try:
        address = env01.vm_ip.rpartition("@")[2]
        theirs = env02.vm_ip.rpartition("@")[0]
        name, _, key = env01.vm_ip.rpartition("@")[0].partition(":")
        with httpx.Client(trust_env=False, timeout=60) as client:
            assert client.get(f"http://{theirs}@{address}:5000/screenshot").status_code == 401
            assert client.get(f"http://{name}:{key}x@{address}:5000/screenshot").status_code == 401
            assert client.get(f"http://{address}:5000/screenshot").status_code == 401
            # ... while env02's own credentials open env02's server.
            assert client.get(f"http://{env02.vm_ip}:5000/screenshot").status_code == 200
    finally:
        env02.close()


def test_the_controllers_calls_run_inside_the_environment(pool: Pool, env01: DesktopEnv) -> None:
    env01.reset()
    controller = env01.controller
    home = status_of(pool, "env01")["home"]
    bash = controller.run_bash_script("mkdir -p ~/Desktop && echo hi > ~/Desktop/a.txt; id -un")
    assert bash["returncode"] == 0 and bash["output"].strip() == status_of(pool, "env01")["user"]
    assert controller.get_file(f"{home}/Desktop/a.txt") == b"hi\n"
    assert controller.get_file(f"{home}/Desktop/missing.txt") is None
    assert controller.get_file("/etc/hostname") is not None  # read inside, beyond the home
    script = controller.run_python_script("import os; print(os.environ['DISPLAY'])")
    assert script["output"].strip() == status_of(pool, "env01")["display"]
    tree = controller.get_vm_directory_tree(f"{home}/Desktop")
    assert tree is not None and {"name": "a.txt", "type": "file"} in tree["children"]
    assert controller.get_vm_desktop_path() == f"{home}/Desktop"
    assert controller.execute_python_command("print(pyautogui.size())")["returncode"] == 0
    started = time.monotonic()
    slow = controller.run_bash_script("sleep 30", timeout=1)
    assert slow["status"] == "error" and time.monotonic() - started < 20


def test_osworlds_constructor_refuses_what_means_nothing_here_by_name(pool: Pool) -> None:
    with pytest.raises(UnsupportedArgument) as provider:
        DesktopEnv(provider_name="vmware", path_to_vm="env01", pool=pool)
    assert provider.value.name == "provider_name"
    with pytest.raises(UnsupportedArgument) as screen:
        DesktopEnv(path_to_vm="env01", screen_size=(1280, 800), pool=pool)
    assert screen.value.name == "screen_size" and "1920x1080" in str(screen.value)
    with pytest.raises(UnsupportedArgument) as canary:
        DesktopEnv(path_to_vm="env00", pool=pool)
    assert canary.value.name == "path_to_vm"
