"""`VMServerController` makes OSWorld's controller calls over the in-VM server at
``vm_ip``: each reaches its own environment with its key, and answers as OSWorld's
controller answers (None for what the server could not send). The environments behind
the server are stand-ins; the real ones are the integration tests'
(test_osworld_runner_in_windows)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cleanroom.rollouts.osworld_vm_client import VMServerController
from cleanroom.rollouts.osworld_vm_server import build_vm_server_app, serving_vm_server, vm_ip

KEY = "harness-key"


class StandIn:
    """Answers as `EnvironmentController` answers."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.recording = False

    def get_screenshot(self) -> bytes:
        return b"\x89PNG" + self.name.encode()

    def get_accessibility_tree(self) -> str:
        return f"<desktop-frame name={self.name!r}/>"

    def execute(self, command: Any, *, shell: bool = False) -> dict[str, Any]:
        return {"status": "success", "output": repr(command), "error": "", "returncode": 0}

    def get_file(self, path: str) -> bytes | None:
        return b"data" if path == "/home/u/a.txt" else None

    def start_recording(self) -> None:
        self.recording = True

    def end_recording_bytes(self) -> bytes:
        self.recording = False
        return b"\x89PNG recording of " + self.name.encode()


@pytest.fixture(scope="module")
def address() -> Iterator[str]:
    stand_ins = {name: StandIn(name) for name in ("env01", "env02")}
    with serving_vm_server(build_vm_server_app(stand_ins.get, KEY)) as served:  # type: ignore[arg-type]
        yield served


@pytest.fixture
def env02(address: str) -> Iterator[VMServerController]:
    controller = VMServerController(vm_ip("env02", KEY, address))
    yield controller
    controller.close()


def test_the_calls_reach_the_environment_vm_ip_names(env02: VMServerController) -> None:
    assert env02.get_screenshot() == b"\x89PNGenv02"
    assert env02.get_accessibility_tree() == "<desktop-frame name='env02'/>"
    assert env02.get_file("/home/u/a.txt") == b"data"


def test_what_the_server_cannot_send_is_none(env02: VMServerController) -> None:
    assert env02.get_file("/home/u/missing.txt") is None


def test_pyautogui_code_runs_with_osworlds_prefix(env02: VMServerController) -> None:
    answer = env02.execute_python_command("pyautogui.press('a')")
    assert answer is not None and answer["returncode"] == 0
    assert "import pyautogui" in answer["output"] and "pyautogui.press('a')" in answer["output"]


def test_the_recording_is_written_where_the_runner_names_it(
    env02: VMServerController, tmp_path: Path
) -> None:
    env02.start_recording()
    env02.end_recording(str(tmp_path / "recording.mp4"))
    assert (tmp_path / "recording.mp4").read_bytes() == b"\x89PNG recording of env02"


def test_another_environments_key_opens_nothing(address: str, tmp_path: Path) -> None:
    _, _, rest = vm_ip("env01", KEY, address).partition(":")
    wrong = VMServerController(f"env02:{rest}")  # env01's key, env02's name
    try:
        assert wrong.get_screenshot() is None
        wrong.end_recording(str(tmp_path / "recording.mp4"))
        assert not (tmp_path / "recording.mp4").exists()
    finally:
        wrong.close()
