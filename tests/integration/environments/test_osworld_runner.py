"""OSWorld's run loop over a pool environment, through `osworld_provider.DesktopEnv`
constructed with OSWorld's arguments at OSWorld's screen size (1920x1080).

`run_single_example` (tests/integration/osworld_runner.py) makes the calls OSWorld's
runner (``lib_run_single``) makes, in its order. A scripted agent per action space solves a real
task (rename a folder on the Desktop in the terminal); the agent also reaches its
environment as OSWorld's agents reach their VM, at ``http://{vm_ip}:5000``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest

from cleanroom.environments.interface import ScreenSize, status_of
from cleanroom.environments.pool.plan import PoolConfig
from cleanroom.environments.pool.pool import Pool
from cleanroom.rollouts.osworld_provider import DesktopEnv, UnsupportedArgument

from ..conftest import require_desktop_stack
from ..osworld_runner import ScriptedAgent, run_single_example
from ..osworld_screen import visible_point

REPO = Path(__file__).resolve().parents[3]
TASK = json.loads(
    (REPO / "tests/data/osworld/tasks/os/e0df059f-28a6-4169-924f-b9623e7184cc.json").read_text()
)
SPACES = ("pyautogui", "claude_computer_use", "autoglm_computer_use")

pytestmark = [pytest.mark.slow, pytest.mark.beside_desktops]


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
