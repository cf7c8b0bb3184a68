"""OSWorld's controller over one pool environment: the calls OSWorld's runner, agents and
getters make of ``env.controller`` (its ``PythonController``), with the answers its in-VM
server gives, made through the pool's interface instead of a server in a VM.

Every command runs where the environment's programs run: as its user, in its sandbox, on
its display (`DesktopController.run_inside`), aimed at the generation the controller's
handle believes current (a stale one is refused, as any action is). What comes back is
bounded: a command's output and error at `OUTPUT_LIMIT` bytes each, a file at
`FILE_LIMIT` (a file beneath the home is read by the pool's no-follow reader,
`read_home_file`; elsewhere by a reader run inside that opens it no-follow and
non-blocking and takes only a regular file), a directory tree at `TREE_LIMIT` entries.

OSWorld's answers are kept: ``None`` where its controller gives ``None`` (a screenshot or
tree that could not be read, a file that is not there), and its server's dictionaries
(``status``, ``output``, ``error``, ``returncode``) for commands. A recording is made
outside the environment, from the screen as the harness sees it (`Recorder`).

Not here yet: the wallpaper (``get_vm_wallpaper`` gives ``None``), the terminal's text
(``None``, as OSWorld gives for anything but gnome-terminal), and the ``/setup/...`` calls
of OSWorld's ``SetupController`` (cleanroom runs a task's setup itself).
"""

from __future__ import annotations

import base64
import io
import json
import logging
import os
import subprocess
import threading
from pathlib import PurePosixPath
from typing import Any

from cleanroom.environments.errors import EnvironmentBroken, PoolError, StaleGeneration
from cleanroom.environments.interface import status_of
from cleanroom.environments.osworld_env.actions import (
    Control,
    PointerCode,
    PyautoguiCode,
    Translated,
    computer_13_outcome,
)
from cleanroom.environments.policy.handle import LocalHandle

log = logging.getLogger(__name__)

# What one command's output (and, apart, its error) may bring back.
OUTPUT_LIMIT = 1 << 20
# The largest file `get_file` reads (OSWorld's getters read documents, sheets, images).
FILE_LIMIT = 64 << 20
# How many entries `get_vm_directory_tree` lists before it stops.
TREE_LIMIT = 10_000
# OSWorld's server's limits: a command (``/execute``) and a script (``/run_python``).
COMMAND_TIMEOUT_S = 120.0
SCRIPT_TIMEOUT_S = 30.0
# How much longer than the command the harness waits for the program that runs it.
_GRACE_S = 15.0
# The Python OSWorld's server runs code with: the system one, where pyautogui is.
SYSTEM_PYTHON = "python3"

# Runs one command inside and prints what it gave as one JSON line, each stream cut at
# the limit: what the harness reads back is bounded whatever the command writes.
_RUNNER = r"""
import json, subprocess, sys
argv, shell, cwd, timeout, limit = json.loads(sys.argv[1])
try:
    p = subprocess.run(argv, shell=shell, cwd=cwd or None, capture_output=True,
                       timeout=timeout, stdin=subprocess.DEVNULL)
    out = {"returncode": p.returncode, "timed_out": False, "output": p.stdout, "error": p.stderr}
except subprocess.TimeoutExpired as e:
    out = {"returncode": -1, "timed_out": True, "output": e.stdout or b"", "error": e.stderr or b""}
except OSError as e:
    out = {"returncode": -1, "timed_out": False, "output": b"", "error": str(e).encode()}
for k in ("output", "error"):
    out[k + "_cut"] = len(out[k]) > limit
    out[k] = out[k][:limit].decode("utf-8", "replace")
print(json.dumps(out))
"""

# Reads one file inside, no-follow and non-blocking, a regular file only, bounded.
_READER = r"""
import base64, json, os, stat, sys
path, limit = json.loads(sys.argv[1])
try:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
except OSError as e:
    print(json.dumps({"error": str(e)})); sys.exit()
with os.fdopen(fd, "rb") as f:
    st = os.fstat(f.fileno())
    if not stat.S_ISREG(st.st_mode):
        print(json.dumps({"error": "not a regular file"})); sys.exit()
    if st.st_size > limit:
        print(json.dumps({"error": "over the limit"})); sys.exit()
    data = f.read(limit + 1)
print(json.dumps({"data": base64.b64encode(data[:limit]).decode()} if len(data) <= limit
                 else {"error": "over the limit"}))
"""

# Lists a directory tree inside as OSWorld's server does (name, type, children), no-follow.
_LISTER = r"""
import json, os, sys
path, limit = json.loads(sys.argv[1])
seen = 0
def walk(p):
    global seen
    seen += 1
    node = {"name": os.path.basename(p) or p, "type": "directory", "children": []}
    try:
        entries = sorted(os.scandir(p), key=lambda e: e.name)
    except OSError:
        return node
    for e in entries:
        if seen >= limit:
            break
        if e.is_dir(follow_symlinks=False):
            node["children"].append(walk(e.path))
        else:
            seen += 1
            node["children"].append({"name": e.name, "type": "file"})
    return node
if not os.path.isdir(path) or os.path.islink(path):
    print(json.dumps(None))
else:
    print(json.dumps(walk(path)))
"""


class NoRecording(PoolError):
    """Not one frame of the screen could be taken for a recording."""


class Recorder:
    """The screen, as the harness sees it (`DesktopController.pixels`, outside the
    gate), sampled every ``interval_s`` while recording: at most ``max_frames`` frames,
    each scaled to at most ``width`` pixels across and kept as PNG. Written as an
    animated PNG: the machine has no video encoder, and the frames need none."""

    def __init__(
        self, handle: LocalHandle, interval_s: float = 1.0, max_frames: int = 1800, width: int = 960
    ) -> None:
        self.handle = handle
        self.interval_s = interval_s
        self.max_frames = max_frames
        self.width = width
        self.frames: list[bytes] = []
        self.errors = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        """Whether frames are being taken now."""
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        """Start taking frames (a recording already running goes on)."""
        if self.running:
            return
        self.frames.clear()
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="osworld-recording", daemon=True)
        self._thread.start()

    def stop(self) -> list[bytes]:
        """Stop taking frames; the frames taken, at least one (the screen now)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
        if not self.frames:
            self._frame()
        return list(self.frames)

    def _run(self) -> None:
        while not self._stop.is_set() and len(self.frames) < self.max_frames:
            self._frame()
            self._stop.wait(self.interval_s)

    def _frame(self) -> None:
        from PIL import Image

        try:
            pixels = self.handle.pool.pixels(self.handle.env)
        except PoolError:
            self.errors += 1  # the environment between generations: that frame is skipped
            return
        image = Image.frombytes("RGB", (pixels.width, pixels.height), pixels.rgb)
        if image.width > self.width:
            image = image.resize((self.width, round(image.height * self.width / image.width)))
        out = io.BytesIO()
        image.save(out, format="PNG", optimize=False, compress_level=1)
        self.frames.append(out.getvalue())


def write_animation(frames: list[bytes], interval_s: float) -> bytes:
    """``frames`` (PNG each) as one animated PNG, each shown for ``interval_s``."""
    from PIL import Image

    images = [Image.open(io.BytesIO(f)) for f in frames]
    out = io.BytesIO()
    images[0].save(
        out,
        format="PNG",
        save_all=True,
        append_images=images[1:],
        duration=int(interval_s * 1000),
        loop=0,
    )
    return out.getvalue()


class EnvironmentController:
    """OSWorld's ``PythonController`` calls over ``handle``'s environment."""

    def __init__(self, handle: LocalHandle, *, recording_interval_s: float = 1.0) -> None:
        self.handle = handle
        self.vm_ip: str | None = None  # set by the environment that serves OSWorld's server
        self.recorder = Recorder(handle, interval_s=recording_interval_s)

    # -- observing ----------------------------------------------------------------------

    def get_screenshot(self) -> bytes | None:
        """The screen as PNG; None when it could not be read."""
        try:
            return self.handle.screenshot()
        except (StaleGeneration, EnvironmentBroken):
            raise
        except PoolError:
            return None

    def get_accessibility_tree(self) -> str | None:
        """The environment's AT-SPI tree in OSWorld's XML; None when it could not be read."""
        try:
            return self.handle.accessibility_tree()
        except (StaleGeneration, EnvironmentBroken):
            raise
        except PoolError:
            return None

    def get_terminal_output(self) -> str | None:
        """None: OSWorld reads a terminal's text from gnome-terminal only, and the pool's
        terminal is not one."""
        return None

    def get_vm_platform(self) -> str:
        """``Linux``, as ``platform.system()`` says inside."""
        return "Linux"

    def get_vm_screen_size(self) -> dict[str, int]:
        """The screen's size, as OSWorld's server answers it."""
        size = self.handle.pool.screen_size(self.handle.env)
        return {"width": size.width, "height": size.height}

    def get_vm_window_size(self, app_class_name: str) -> dict[str, int] | None:
        """The size of the first top-level window whose class is ``app_class_name``."""
        for window in self.handle.windows():
            if app_class_name.lower() in str(window.get("wm_class", "")).lower():
                return {"width": int(window["width"]), "height": int(window["height"])}
        return None

    def get_vm_wallpaper(self) -> bytes | None:
        """None: the pool's desktops have no wallpaper to read yet."""
        return None

    def get_vm_desktop_path(self) -> str:
        """The user's Desktop folder."""
        return str(PurePosixPath(self._home()) / "Desktop")

    def get_vm_directory_tree(self, path: str) -> dict[str, Any] | None:
        """The tree beneath ``path`` as OSWorld's server lists it (``name``, ``type``,
        ``children``), links not followed, at most `TREE_LIMIT` entries; None when
        ``path`` is not a folder."""
        answer = self._python_json(_LISTER, [path, TREE_LIMIT])
        return answer if isinstance(answer, dict) else None

    def get_file(self, file_path: str) -> bytes | None:
        """The file at ``file_path`` inside; None when no regular file of at most
        `FILE_LIMIT` bytes is there (OSWorld's controller gives None when its server
        cannot send it)."""
        home = PurePosixPath(self._home())
        path = PurePosixPath(os.path.normpath(file_path))
        if path.is_relative_to(home) and path != home:
            return self.handle.pool.read_home_file(
                self.handle.env, str(path.relative_to(home)), FILE_LIMIT
            )
        # Base64 takes four bytes for three.
        answer = self._python_json(_READER, [str(path), FILE_LIMIT], limit=FILE_LIMIT * 4 // 3 + 64)
        if not isinstance(answer, dict) or "data" not in answer:
            return None
        return base64.b64decode(answer["data"])

    # -- running ------------------------------------------------------------------------

    def execute(
        self,
        command: list[str] | str,
        *,
        shell: bool = False,
        timeout_s: float = COMMAND_TIMEOUT_S,
        working_dir: str | None = None,
        limit: int = OUTPUT_LIMIT,
    ) -> dict[str, Any]:
        """``command`` run inside, as OSWorld's server's ``/execute`` runs it; its
        answer: ``status``, ``output``, ``error``, ``returncode``, each stream cut at
        ``limit`` bytes."""
        self._check_generation()
        request = json.dumps([command, shell, working_dir, timeout_s, limit])
        python = self.handle.pool.python(self.handle.env)
        try:
            result = self.handle.pool.run_inside(
                self.handle.env, [python, "-c", _RUNNER, request], timeout_s + _GRACE_S
            )
        except subprocess.TimeoutExpired:
            return _answer(-1, "", f"timed out after {timeout_s:g} s", timed_out=True)
        try:
            ran = json.loads(result.output.strip().splitlines()[-1])
        except (ValueError, IndexError):
            return _answer(result.code or -1, "", result.output[-limit:])
        if ran["timed_out"]:
            return _answer(-1, ran["output"], f"timed out after {timeout_s:g} s", timed_out=True)
        return _answer(ran["returncode"], ran["output"], ran["error"])

    def execute_python_command(self, command: str) -> dict[str, Any]:
        """pyautogui code run as OSWorld's controller sends it: with its prefix, by the
        system Python (``python -c``)."""
        return self.execute([SYSTEM_PYTHON, "-c", PyautoguiCode(command).program()])

    def run_python_script(self, script: str) -> dict[str, Any]:
        """A Python script run inside as OSWorld's ``/run_python`` runs it (30 s)."""
        answer = self.execute([SYSTEM_PYTHON, "-c", script], timeout_s=SCRIPT_TIMEOUT_S)
        if answer["status"] != "success":
            answer["message"] = "Failed to execute command."
        return answer

    def run_bash_script(
        self, script: str, timeout: int = 30, working_dir: str | None = None
    ) -> dict[str, Any]:
        """A bash script run inside as OSWorld's ``/run_bash_script`` runs it."""
        return self.execute(
            ["bash", "-c", script], timeout_s=float(timeout), working_dir=working_dir
        )

    def execute_action(self, action: Any) -> None:
        """A ``computer_13`` action, as OSWorld's controller performs it: keys and
        clicks through the pool's policy actions, the pointer actions it lacks as the
        pyautogui calls OSWorld sends, ``WAIT``/``FAIL``/``DONE`` as nothing."""
        screen = self.get_vm_screen_size()
        result = computer_13_outcome(action, screen=(screen["width"], screen["height"]))
        if isinstance(result, Translated):
            for one in result.actions:
                self.handle.act(one)
        elif isinstance(result, PointerCode):
            for code in result.codes:
                self.execute([SYSTEM_PYTHON, "-c", code.program()])
        elif not isinstance(result, Control):  # pragma: no cover - the outcomes are these
            raise AssertionError(result)

    # -- recording ----------------------------------------------------------------------

    def start_recording(self) -> None:
        """Start recording the screen."""
        self.recorder.start()

    def end_recording(self, dest: str) -> None:
        """Stop recording and write it to ``dest`` (an animated PNG; see `Recorder`).
        When not one frame could be taken nothing is written, as OSWorld's controller
        writes nothing when its server has no recording to send."""
        try:
            recording = self.end_recording_bytes()
        except NoRecording:
            log.warning("%s: no recording to write to %s", self.handle.env, dest)
            return
        with open(dest, "wb") as out:
            out.write(recording)

    def end_recording_bytes(self) -> bytes:
        """Stop recording; the recording (`NoRecording` when not one frame was taken)."""
        frames = self.recorder.stop()
        if not frames:
            raise NoRecording(f"{self.handle.env}: not one frame of the screen was taken")
        return write_animation(frames, self.recorder.interval_s)

    # -- beneath ------------------------------------------------------------------------

    def _home(self) -> str:
        return str(status_of(self.handle.pool, self.handle.env)["home"])

    def _check_generation(self) -> None:
        current = self.handle.pool.generation(self.handle.env)
        if current != self.handle.generation:
            raise StaleGeneration(self.handle.env, self.handle.generation, current)

    def _python_json(self, program: str, args: list[Any], limit: int = OUTPUT_LIMIT) -> Any:
        """``program`` run inside by the environment's Python with ``args``; the JSON
        it printed last, or None when it printed none."""
        answer = self.execute(
            [self.handle.pool.python(self.handle.env), "-c", program, json.dumps(args)],
            timeout_s=SCRIPT_TIMEOUT_S,
            limit=limit,
        )
        lines = answer["output"].strip().splitlines()
        if answer["returncode"] != 0 or not lines:
            return None
        try:
            return json.loads(lines[-1])
        except ValueError:
            return None


def _answer(returncode: int, output: str, error: str, *, timed_out: bool = False) -> dict[str, Any]:
    status = "success" if returncode == 0 and not timed_out else "error"
    return {"status": status, "output": output, "error": error, "returncode": returncode}
