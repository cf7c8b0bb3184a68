"""X authority cookies: each display admits only its own user and the harness.

Xvfb started with ``-auth`` refuses any client without the display's MIT cookie, so one
environment's user cannot open another environment's display. Each user gets a file with
its own cookie; the harness process keeps one private file holding every cookie it made
and points ``XAUTHORITY`` at it (python-xlib and libX11 both read that variable).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import secrets
import subprocess
import tempfile
import threading
from pathlib import Path

from cleanroom.environments.errors import StartError

_lock = threading.Lock()
_harness_file: Path | None = None


def new_cookie() -> str:
    """A fresh 128-bit MIT-MAGIC-COOKIE-1 value in hex."""
    return secrets.token_hex(16)


def write_cookie(path: Path, display_number: int, cookie: str) -> None:
    """Add the display's cookie to an authority file (created if missing)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch(mode=0o600, exist_ok=True)
    proc = subprocess.run(
        ["xauth", "-q", "-f", str(path), "add", f":{display_number}", "MIT-MAGIC-COOKIE-1", cookie],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise StartError(f"xauth could not write {path}: {proc.stderr.strip()}")


def harness_authority() -> Path:
    """This process's private authority file, created on first use and set as XAUTHORITY."""
    global _harness_file
    with _lock:
        if _harness_file is None:
            fd, name = tempfile.mkstemp(prefix="cleanroom-harness-", suffix=".Xauthority")
            os.close(fd)
            os.chmod(name, 0o600)
            _harness_file = Path(name)
            os.environ["XAUTHORITY"] = name
            atexit.register(_remove_harness_file)
        return _harness_file


def grant_harness(display_number: int, cookie: str) -> None:
    """Let this process open the display."""
    path = harness_authority()
    with _lock:
        write_cookie(path, display_number, cookie)


def _remove_harness_file() -> None:
    if _harness_file is not None:
        with contextlib.suppress(FileNotFoundError):
            _harness_file.unlink()
