"""A stand-in for OSWorld's VM, for OSWorld's getters, and a local folder for cleanroom's.

OSWorld's getters reach the VM over HTTP: ``get_vm_command_line`` posts to the in-VM
server's ``/execute``; ``get_vm_file`` asks ``env.controller.get_file``, which posts to
``/file``. `FakeVm` serves both from a local folder standing in for the user's home,
doing what OSWorld's server does for them (it is not on PyPI, so it is restated here):

``/execute``
    ``shell`` taken by truthiness; a string command without a shell split with
    ``shlex``; a list item starting ``~/`` expanded to the home; run with
    ``subprocess.run(..., text=True, timeout=120)``, so stdout and stderr are decoded as
    UTF-8 (the VM's locale) with universal newlines, strictly. Success is HTTP 200 with
    ``output``, ``error`` and ``returncode``; an exception while running (no such program,
    time limit, output that is not UTF-8) is HTTP 500 with a message, and one before it
    (a list item that is no string, a string ``shlex`` cannot split) is Flask's HTML 500.
``/file``
    ``~`` and ``$VARIABLES`` expanded; 404 when the path does not exist; otherwise the
    file's bytes, following links (a folder is a 500).
``/list_directory``
    400 unless the path (not expanded; relative to the home) is a folder, links
    followed; otherwise ``{"directory_tree": tree}``, each folder
    ``{"type": "directory", "name", "children"}`` in ``os.listdir`` order, a link to a
    folder taken as a folder, each other entry ``{"type": "file", "name"}``, and a folder
    ``os.listdir`` cannot read ``{"error": message}``.
``/desktop_path``
    ``{"desktop_path": HOME/Desktop}``.
``/wallpaper``
    ``gsettings get org.gnome.desktop.background picture-uri``, stripped, ``file://`` and
    quotes dropped, served as a file; 404 when gsettings fails or gives nothing, 500 when
    the file cannot be served.
``GET /accessibility``
    ``{"AT": tree}``, the tree a test sets as ``FakeVm.tree`` (the desktop's, which the
    server writes from AT-SPI); 500 when there is none, as when the server's walk fails.

The controller's Python commands (``python -c "import pyautogui; ..."``) run with this
interpreter and a stand-in ``pyautogui`` that does nothing: the getters compared use them
only to print a path of the home.

The commands run in the home with the same environment as cleanroom's local guest, so
the two sides differ only in what the getters do. The server's time limit is a parameter
(the tests use a short one with the same limit for cleanroom). Relative paths resolve
against the home, where cleanroom resolves them too.

`Downloads` is a local web server for ``cloud_file``: both sides fetch the same URLs.
`VlcWeb` stands in for VLC's web interface, for ``vlc_playing_info``.
`Sides` puts it together: one home, OSWorld's getters on it through the fake VM,
cleanroom's through a local guest, a task cache for each.
"""

from __future__ import annotations

import base64
import json
import os
import pwd
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import types
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from cleanroom.guests.local import LocalGuest, login_environment
from cleanroom.verifiers.osworld import getters as our_getters
from cleanroom.verifiers.osworld.cached_file import CachedFile
from cleanroom.verifiers.osworld.getters import GetterContext
from cleanroom.verifiers.osworld.settings import CheckSettings
from cleanroom.verifiers.osworld.task_cache import TaskCache

from .reference import Raised, call_cleanroom, call_osworld, osworld

LIMIT = 2.0  # seconds: the command time limit of both sides here (120 in OSWorld)

# The getters whose value is a file (OSWorld: a path; cleanroom: a cached file).
FILE_GETTERS = {
    "vm_file",
    "cache_file",
    "cloud_file",
    "vlc_config",
    "vlc_playing_info",
    "gimp_config_file",
    "vm_wallpaper",
    "audio_in_slide",
    "background_image_in_slide",
}

_VARIABLE = re.compile(r"\$(\w+|\{[^}]*\})", re.ASCII)


class _Server:
    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(5)


def _reply(handler: BaseHTTPRequestHandler, status: int, body: bytes, kind: str) -> None:
    handler.send_response(status)
    handler.send_header("Content-Type", kind)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def _json(handler: BaseHTTPRequestHandler, status: int, value: Any) -> None:
    _reply(handler, status, json.dumps(value).encode(), "application/json")


class FakeVm:
    """OSWorld's in-VM server for one home folder, on a local port."""

    def __init__(self, home: str, *, command_timeout: float) -> None:
        self.home = home
        self.command_timeout = command_timeout
        self.tree: str | None = None
        self.environment = login_environment(pwd.getpwuid(os.geteuid()), home)
        vm = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                if self.path == "/accessibility" and vm.tree is not None:
                    _json(self, 200, {"AT": vm.tree})
                elif self.path == "/accessibility":
                    _json(self, 500, {"error": "no accessibility tree"})
                else:
                    _reply(self, 404, b"not found", "text/plain")

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path == "/execute":
                    vm._execute(self, json.loads(body))
                elif self.path == "/file":
                    vm._file(self, urllib.parse.parse_qs(body.decode()))
                elif self.path == "/list_directory":
                    vm._list_directory(self, json.loads(body))
                elif self.path == "/desktop_path":
                    _json(self, 200, {"desktop_path": os.path.join(vm.home, "Desktop")})
                elif self.path == "/wallpaper":
                    vm._wallpaper(self)
                else:
                    _reply(self, 404, b"not found", "text/plain")

        self._server = _Server(Handler)
        self.port = self._server.port
        self._stubs = tempfile.TemporaryDirectory(prefix="fake-vm-python-")
        with open(os.path.join(self._stubs.name, "pyautogui.py"), "w") as fh:
            fh.write("FAILSAFE = True\n")

    def close(self) -> None:
        self._server.close()
        self._stubs.cleanup()

    def env(self, cache_dir: str, controller_class: type) -> types.SimpleNamespace:
        """The ``env`` OSWorld's getters take: what they read of a ``DesktopEnv``."""
        controller = controller_class("127.0.0.1", self.port)
        controller.retry_interval = 0  # its retries on a 404 need not wait here
        return types.SimpleNamespace(
            vm_ip="127.0.0.1",
            server_port=self.port,
            cache_dir=cache_dir,
            controller=controller,
            vm_platform="Linux",
        )

    def _expanduser(self, path: str) -> str:
        if path == "~" or path.startswith("~/"):
            return (self.home.rstrip("/") + path[1:]) or "/"
        return os.path.expanduser(path)

    def _expandvars(self, path: str) -> str:
        def value(match: re.Match[str]) -> str:
            name = match.group(1).strip("{}")
            return self.environment.get(name, match.group(0))

        return _VARIABLE.sub(value, path)

    def _execute(self, handler: BaseHTTPRequestHandler, data: dict[str, Any]) -> None:
        try:
            shell = data.get("shell", False)
            command = data.get("command", "" if shell else [])
            if isinstance(command, str) and not shell:
                command = shlex.split(command)
            for i, arg in enumerate(command):
                if arg.startswith("~/"):
                    command[i] = self._expanduser(arg)
        except Exception:
            _reply(handler, 500, b"<h1>Internal Server Error</h1>", "text/html")
            return
        environment = self.environment
        if isinstance(command, list) and command[:2] == ["python", "-c"]:
            command = [sys.executable, *command[1:]]
            environment = {**environment, "PYTHONPATH": self._stubs.name}
        try:
            result = subprocess.run(
                command,
                capture_output=True,
                shell=shell,
                text=True,
                encoding="utf-8",
                timeout=self.command_timeout,
                cwd=self.home,
                env=environment,
                start_new_session=True,
            )
        except Exception as exc:
            _json(handler, 500, {"status": "error", "message": str(exc)})
            return
        _json(
            handler,
            200,
            {
                "status": "success",
                "output": result.stdout,
                "error": result.stderr,
                "returncode": result.returncode,
            },
        )

    def _file(self, handler: BaseHTTPRequestHandler, form: dict[str, list[str]]) -> None:
        if "file_path" not in form:
            _json(handler, 400, {"error": "file_path is required"})
            return
        path = self._expandvars(self._expanduser(form["file_path"][0]))
        path = os.path.join(self.home, path)  # an absolute path stays as it is
        if not os.path.exists(path):
            _json(handler, 404, {"error": "File not found"})
            return
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except Exception as exc:
            _json(handler, 500, {"error": f"Failed to serve file: {exc}"})
            return
        _reply(handler, 200, data, "application/octet-stream")

    def _list_directory(self, handler: BaseHTTPRequestHandler, data: dict[str, Any]) -> None:
        def contents(directory: str) -> dict[str, Any]:
            tree: dict[str, Any] = {
                "type": "directory",
                "name": os.path.basename(directory),
                "children": [],
            }
            try:
                for entry in os.listdir(directory):
                    full_path = os.path.join(directory, entry)
                    if os.path.isdir(full_path):
                        tree["children"].append(contents(full_path))
                    else:
                        tree["children"].append({"type": "file", "name": entry})
            except OSError as exc:
                tree = {"error": str(exc)}
            return tree

        if "path" not in data:
            _json(handler, 400, {"error": "Missing 'path' parameter"})
            return
        start = data["path"]
        if not os.path.isdir(os.path.join(self.home, start)):
            _json(handler, 400, {"error": "The provided path is not a directory"})
            return
        # The server's working folder is the home: relative paths start there.
        tree = contents(os.path.join(self.home, start))
        _json(handler, 200, {"directory_tree": tree})

    def _wallpaper(self, handler: BaseHTTPRequestHandler) -> None:
        try:
            output = subprocess.check_output(
                ["gsettings", "get", "org.gnome.desktop.background", "picture-uri"],
                stderr=subprocess.PIPE,
                env=self.environment,
                cwd=self.home,
            )
            path = output.decode("utf-8").strip().replace("file://", "").replace("'", "")
        except subprocess.CalledProcessError:
            path = ""
        except Exception as exc:
            _json(handler, 500, {"error": str(exc)})
            return
        if not path:
            _json(handler, 404, {"error": "Wallpaper file not found"})
            return
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except Exception as exc:
            _json(handler, 500, {"error": str(exc)})
            return
        _reply(handler, 200, data, "image/png")


class Downloads:
    """A local web server answering each path from a table: bytes, or (status, bytes), or
    a redirect (``("redirect", "/other")``). Both sides' ``cloud_file`` fetch from it."""

    def __init__(self) -> None:
        self.table: dict[str, Any] = {}
        self.requests: list[str] = []
        downloads = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                downloads.requests.append(self.path)
                answer = downloads.table.get(self.path, (404, b"no such file"))
                if isinstance(answer, bytes):
                    answer = (200, answer)
                if answer[0] == "redirect":
                    self.send_response(302)
                    self.send_header("Location", answer[1])
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                _reply(self, answer[0], answer[1], "application/octet-stream")

        self._server = _Server(Handler)
        self.base = f"http://127.0.0.1:{self._server.port}"

    def url(self, path: str) -> str:
        return self.base + path

    def close(self) -> None:
        self._server.close()


class VlcWeb:
    """VLC's web interface as the environment's VLC serves it: ``/requests/status.xml``
    to an empty user with the password (``password``), else 401. ``status`` is the body."""

    def __init__(self, password: str = "password") -> None:
        self.status = b""
        token = base64.b64encode(f":{password}".encode()).decode()
        web = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                if self.headers.get("Authorization") != f"Basic {token}":
                    _reply(self, 401, b"<html>401</html>", "text/html")
                elif self.path.startswith("/requests/status.xml"):
                    _reply(self, 200, web.status, "text/xml")
                else:
                    _reply(self, 404, b"not found", "text/plain")

        self._server = _Server(Handler)
        self.port = self._server.port

    def close(self) -> None:
        self._server.close()


class Sides:
    """One home folder, OSWorld's getters on it through the fake VM, cleanroom's through
    a local guest, and a task cache for each."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.home = root / "home"
        self.elsewhere = root / "elsewhere"  # where a dest outside the cache would land
        self.osworld_cache = root / "osworld" / "cache" / "task"
        self.cache = TaskCache(str(root / "cleanroom"), "task")
        self.reset()
        self.vm = FakeVm(str(self.home), command_timeout=LIMIT)
        self.downloads = Downloads()
        settings = CheckSettings(getter_timeout=LIMIT, download_timeout=10)
        self.guest = LocalGuest(home=str(self.home))
        self.ctx = GetterContext(self.guest, settings, self.cache)

    def reset(self) -> None:
        for folder in (self.home, self.elsewhere, self.osworld_cache.parent.parent):
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
        self.osworld_cache.mkdir(parents=True)
        self.cache.reset()

    def close(self) -> None:
        self.vm.close()
        self.downloads.close()
        self.guest.close()

    def env(self) -> Any:
        return self.vm.env(str(self.osworld_cache), osworld().python_controller)

    def run(self, getter: str, config: dict[str, Any], **env: Any) -> tuple[Any, Any]:
        """cleanroom's and OSWorld's getter on the same config, values made comparable;
        ``env`` sets more attributes of OSWorld's ``env`` (``vlc_port``, say)."""
        mine = call_cleanroom(our_getters.GETTERS[getter], self.ctx, config)
        theirs_env = self.env()
        for name, value in env.items():
            setattr(theirs_env, name, value)
        theirs = call_osworld(osworld().getters[getter], theirs_env, config)
        if getter not in FILE_GETTERS:
            return mine, theirs
        return self._ours(mine), self._theirs(theirs)

    def _ours(self, value: Any) -> Any:
        if isinstance(value, list):
            return [self._ours(v) for v in value]
        if isinstance(value, CachedFile):
            return ("file", os.path.relpath(value.path, self.cache.dir), value.data)
        return value

    def _theirs(self, value: Any) -> Any:
        if isinstance(value, list):
            return [self._theirs(v) for v in value]
        if isinstance(value, str):  # a file getter's path
            if os.path.isdir(value):
                return Raised("IsADirectoryError")  # every metric's open() would raise
            with open(value, "rb") as fh:
                return ("file", os.path.relpath(value, self.osworld_cache), fh.read())
        return value
