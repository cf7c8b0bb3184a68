"""A program of one environment that grabs its display's server: the harness's read of
that environment's clipboard ends by its deadline as the environment's own act, and
every other environment reads as before."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cleanroom.environments.errors import DisplayHeld
from cleanroom.environments.pool.plan import PoolConfig
from cleanroom.environments.pool.pool import Pool
from cleanroom.environments.x11.clipboard import SELECTION_DEADLINE_S
from cleanroom.lifecycle import wait_until

from ..conftest import require_desktop_stack

GRAB = """
import ctypes, time
x = ctypes.CDLL("libX11.so.6")
x.XOpenDisplay.restype = ctypes.c_void_p
d = ctypes.c_void_p(x.XOpenDisplay(None))
x.XGrabServer(d)
x.XSync(d, 0)
print("grabbed", flush=True)
time.sleep(120)
"""


@pytest.fixture(scope="module")
def pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pool]:
    require_desktop_stack()
    p = Pool(PoolConfig(envs=2, programs=("terminal",)), tmp_path_factory.mktemp("grab-run"))
    p.start()
    try:
        yield p
    finally:
        p.stop()


def test_a_grab_in_one_environment_is_its_own_act_and_leaves_the_other_readable(
    pool: Pool,
) -> None:
    started, log = pool.start_inside("env01", [pool.python("env01"), "-c", GRAB], "grab")
    try:
        assert wait_until(lambda: _says(log, "grabbed"), 20, 0.05), _tail(log)
        begun = time.monotonic()
        with pytest.raises(DisplayHeld):
            pool.read_selection("env01", "CLIPBOARD")
        assert time.monotonic() - begun < SELECTION_DEADLINE_S + 3
        begun = time.monotonic()
        pool.read_selection("env02", "CLIPBOARD")  # answers, whatever it holds
        assert time.monotonic() - begun < 2
    finally:
        pool.end_inside("env01", started)
    # The grab ends with its program, and the environment reads again.
    assert wait_until(lambda: _reads(pool, "env01"), 10, 0.2)


def _says(log: Path, word: str) -> bool:
    return log.exists() and word in log.read_text(errors="replace")


def _tail(log: Path) -> str:
    return log.read_text(errors="replace")[-500:] if log.exists() else "(no log)"


def _reads(pool: Pool, env: str) -> bool:
    try:
        pool.read_selection(env, "CLIPBOARD")
    except DisplayHeld:
        return False
    return True
