"""OSWorld's controller calls, made over HTTP to an equivalent of its in-VM server.

`VMServerController` is what ``env.controller`` is for an agent whose environment is in
another process (`osworld_run_env.RunDesktopEnv`): the calls OSWorld's runner, agents
and getters make of its ``PythonController``, each sent to ``http://{vm_ip}:5000``
(`osworld_vm_server`), where the run makes it through the pool as
`osworld_controller.EnvironmentController` does. The answers are OSWorld's: ``None``
where its controller gives ``None`` (a screenshot, tree or file the server could not
send), and the server's dictionaries for commands. The key travels as the URL's user and
password, as OSWorld's agents' own clients of ``vm_ip`` send it; every answer is read
bounded (`MAX_ANSWER_BYTES`).
"""

from __future__ import annotations

import json
import logging
from typing import Any

import httpx

from cleanroom.core.errors import CleanroomError
from cleanroom.environments.osworld_env.actions import PyautoguiCode
from cleanroom.rollouts.osworld_controller import SYSTEM_PYTHON
from cleanroom.rollouts.osworld_vm_server import VM_SERVER_PORT

# Above the largest answer the server sends (a 64 MiB file, a recording of 1800 frames
# is smaller than that at 960 pixels across), so that a hostile answer stays bounded.
MAX_ANSWER_BYTES = 256 << 20
log = logging.getLogger(__name__)


class AnswerTooLarge(CleanroomError):
    """The server's answer was over `MAX_ANSWER_BYTES`."""


class VMServerController:
    """OSWorld's ``PythonController`` calls over the in-VM server at ``vm_ip``."""

    def __init__(self, vm_ip: str, *, port: int = VM_SERVER_PORT, timeout_s: float = 300.0):
        self.vm_ip = vm_ip
        self.server_port = port
        self._client = httpx.Client(
            base_url=f"http://{vm_ip}:{port}", timeout=timeout_s, trust_env=False
        )

    # -- observing ----------------------------------------------------------------------

    def get_screenshot(self) -> bytes | None:
        """The screen as PNG; None when the server could not send it."""
        return self._bytes("GET", "/screenshot")

    def get_accessibility_tree(self) -> str | None:
        """The environment's AT-SPI tree in OSWorld's XML; None when it could not be read."""
        answer = self._json("GET", "/accessibility")
        return answer.get("AT") if isinstance(answer, dict) else None

    def get_terminal_output(self) -> str | None:
        """The terminal's text, as the server gives it (None here: see the server)."""
        answer = self._json("GET", "/terminal")
        return answer.get("output") if isinstance(answer, dict) else None

    def get_vm_platform(self) -> str | None:
        """``Linux``."""
        data = self._bytes("GET", "/platform")
        return data.decode() if data is not None else None

    def get_vm_screen_size(self) -> dict[str, int] | None:
        """The screen's size: ``{"width": ..., "height": ...}``."""
        answer = self._json("POST", "/screen_size")
        return answer if isinstance(answer, dict) else None

    def get_vm_window_size(self, app_class_name: str) -> dict[str, int] | None:
        """The size of the first top-level window whose class is ``app_class_name``."""
        answer = self._json("POST", "/window_size", data={"app_class_name": app_class_name})
        return answer if isinstance(answer, dict) else None

    def get_vm_wallpaper(self) -> bytes | None:
        """None: the pool's desktops have no wallpaper to read yet."""
        return None

    def get_vm_desktop_path(self) -> str | None:
        """The user's Desktop folder."""
        answer = self._json("POST", "/desktop_path")
        return answer.get("desktop_path") if isinstance(answer, dict) else None

    def get_vm_directory_tree(self, path: str) -> dict[str, Any] | None:
        """The tree beneath ``path`` as OSWorld's server lists it; None when ``path`` is
        not a folder."""
        answer = self._json("POST", "/list_directory", json={"path": path})
        return answer.get("directory_tree") if isinstance(answer, dict) else None

    def get_file(self, file_path: str) -> bytes | None:
        """The file at ``file_path`` inside; None when the server could not send it."""
        return self._bytes("POST", "/file", data={"file_path": file_path})

    # -- running ------------------------------------------------------------------------

    def execute(self, command: list[str] | str, *, shell: bool = False) -> dict[str, Any] | None:
        """``command`` run inside by the server's ``/execute``; its answer."""
        return self._json("POST", "/execute", json={"command": command, "shell": shell})

    def execute_python_command(self, command: str) -> dict[str, Any] | None:
        """pyautogui code run as OSWorld's controller sends it: with its prefix, by the
        system Python."""
        return self.execute([SYSTEM_PYTHON, "-c", PyautoguiCode(command).program()])

    def run_python_script(self, script: str) -> dict[str, Any] | None:
        """A Python script run by the server's ``/run_python``."""
        return self._json("POST", "/run_python", json={"code": script})

    def run_bash_script(
        self, script: str, timeout: int = 30, working_dir: str | None = None
    ) -> dict[str, Any] | None:
        """A bash script run by the server's ``/run_bash_script``."""
        body = {"script": script, "timeout": timeout, "working_dir": working_dir}
        return self._json("POST", "/run_bash_script", json=body)

    # -- recording ----------------------------------------------------------------------

    def start_recording(self) -> None:
        """Start recording the screen."""
        self._bytes("POST", "/start_recording")

    def end_recording(self, dest: str) -> None:
        """Stop recording and write it to ``dest`` (an animated PNG, whatever its name);
        nothing is written when the server has no recording to send, as OSWorld's
        controller writes nothing then."""
        recording = self._bytes("POST", "/end_recording")
        if recording is None:
            log.warning("%s: no recording to write to %s", self.vm_ip.rpartition("@")[2], dest)
            return
        with open(dest, "wb") as out:
            out.write(recording)

    def close(self) -> None:
        """Close the connection."""
        self._client.close()

    # -- beneath ------------------------------------------------------------------------

    def _bytes(self, method: str, path: str, **request: Any) -> bytes | None:
        """The answer's body, or None when the server answered an error (logged)."""
        with self._client.stream(method, path, **request) as response:
            body = bytearray()
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > MAX_ANSWER_BYTES:
                    raise AnswerTooLarge(f"{path}: the answer is over {MAX_ANSWER_BYTES} bytes")
        if response.status_code != 200:
            log.warning("%s %s: %s %s", method, path, response.status_code, bytes(body[:500]))
            return None
        return bytes(body)

    def _json(self, method: str, path: str, **request: Any) -> Any:
        body = self._bytes(method, path, **request)
        return json.loads(body) if body is not None else None
