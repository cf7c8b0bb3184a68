"""Fixtures for the harness tests: the real desktop stack, a verify server, a run."""

from __future__ import annotations

import os
import shutil

import pytest

NEEDED = ("Xvfb", "xauth", "dbus-daemon", "soffice", "xterm", "chromium", "useradd")


@pytest.fixture(scope="session")
def desktop_stack() -> None:
    """Fail (never skip) with a clear message when a part of the desktop stack is missing."""
    if os.geteuid() != 0:
        pytest.fail("the harness tests start a pool, which creates Unix users: run as root")
    missing = [p for p in NEEDED if shutil.which(p) is None]
    if not os.path.exists("/usr/bin/python3"):
        missing.append("/usr/bin/python3 (with python3-pyatspi)")
    if missing:
        pytest.fail(f"missing for the harness: {', '.join(missing)}; run scripts/setup.sh")
