"""Fixtures for the desktop environment tests: real Xvfb, LibreOffice, AT-SPI, users."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from cleanroom.environments.pool.pool import Pool, PoolConfig
from cleanroom.environments.pool.supervisor import PoolProcess

NEEDED = ("Xvfb", "xauth", "dbus-daemon", "soffice", "xterm", "chromium", "useradd")


def require_desktop_stack() -> None:
    """Fail (never skip) with a clear message when a part of the stack is missing."""
    if os.geteuid() != 0:
        pytest.fail("the environment tests create Unix users and need root")
    missing = [p for p in NEEDED if shutil.which(p) is None]
    if not os.path.exists("/usr/bin/python3"):
        missing.append("/usr/bin/python3 (with python3-pyatspi)")
    if missing:
        pytest.fail(f"missing for desktop environments: {', '.join(missing)}; run scripts/setup.sh")


@pytest.fixture(scope="module")
def pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pool]:
    """The canary plus two environments running Writer and a terminal, in this process."""
    require_desktop_stack()
    run_dir = tmp_path_factory.mktemp("pool-run")
    p = Pool(PoolConfig(envs=2, programs=("writer", "terminal")), run_dir)
    p.start()
    try:
        yield p
    finally:
        p.stop()


@pytest.fixture(scope="module")
def supervised(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PoolProcess]:
    """A detached supervisor with the canary and one environment running all programs."""
    require_desktop_stack()
    run_dir = tmp_path_factory.mktemp("supervised-run")
    os.environ["CLEANROOM_POOL_POINTER"] = str(run_dir / "pointer")
    proc = PoolProcess.start(Path(run_dir), envs=1)
    try:
        yield proc
    finally:
        proc.stop()
