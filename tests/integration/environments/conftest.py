"""Fixtures for the desktop environment tests: real Xvfb, LibreOffice, AT-SPI, users."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from cleanroom.environments.pool.plan import PoolConfig
from cleanroom.environments.pool.pool import Pool
from cleanroom.environments.pool.supervisor import PoolProcess

from ..conftest import require_desktop_stack


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
