"""A process of one environment that writes without end, into its own output or into a
descriptor it took from another of its environment's programs, leaves at most the log's
cap and a note on the host, is never blocked, and leaves every other environment's logs
and programs as they were; the environment's log folder as a whole stays under its
budget."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cleanroom.environments.pool.plan import PoolConfig
from cleanroom.environments.pool.pool import Pool
from cleanroom.environments.session.output_log import (
    CAPTURED_OUTPUT_MAX_BYTES,
    LOG_FOLDER_MAX_BYTES,
    PROGRAM_LOG_MAX_BYTES,
    dropped_note,
    log_folder,
)
from cleanroom.lifecycle import wait_until

from ..conftest import require_desktop_stack

FLOOD_MIB = 24  # three times a log's cap
FLOOD = f"""
import sys
block = b"x" * (1 << 20)
for _ in range({FLOOD_MIB}):
    sys.stdout.buffer.write(block)
sys.stdout.flush()
"""
# Takes the terminal's output descriptor (its stderr, through /proc) and floods it.
STEAL = f"""
import os
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        with open(f"/proc/{{pid}}/comm") as f:
            if f.read().strip() != "xterm":
                continue
        stolen = os.open(f"/proc/{{pid}}/fd/2", os.O_WRONLY)
    except OSError:
        continue
    block = b"x" * (1 << 20)
    for _ in range({FLOOD_MIB}):
        os.write(stolen, block)
    print("stole", pid, flush=True)
    break
else:
    print("found no terminal to steal from", flush=True)
"""


@pytest.fixture(scope="module")
def pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pool]:
    require_desktop_stack()
    p = Pool(PoolConfig(envs=2, programs=("terminal",)), tmp_path_factory.mktemp("bounds-run"))
    p.start()
    try:
        yield p
    finally:
        p.stop()


def _settled(log: Path) -> int:
    # The drain writes after the writer is done; wait until the size stops moving.
    sizes: list[int] = []

    def still() -> bool:
        sizes.append(log.stat().st_size if log.exists() else -1)
        return len(sizes) > 3 and sizes[-1] == sizes[-4]

    wait_until(still, 20.0, 0.05)
    return sizes[-1]


def _folder_bytes(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.iterdir() if f.is_file())


def _holders(folder: Path) -> dict[int, list[str]]:
    # Every process but this one (whose drains write the logs) with a file of ``folder``
    # open, and which.
    held: dict[int, list[str]] = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        if int(pid) == os.getpid():
            continue
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith(f"{folder}/"):
                held.setdefault(int(pid), []).append(target)
    return held


def test_no_process_of_the_pool_holds_a_host_log_file(pool: Pool) -> None:
    # The display servers, sandboxes, session buses, readers and programs all write
    # into pipes; only the harness's drains have the files open.
    pool.start_inside("env01", ["sleep", "5"], "sleeper")
    logs = pool.env("env01").spec.log_dir.parent.resolve()
    names = {p.name for p in pool.env("env01").spec.log_dir.iterdir()}
    assert names >= {"sandbox.log", "sleeper.log", "terminal.log", "xvfb.log"}
    assert _holders(logs) == {}


def test_a_command_flooding_its_output_leaves_the_cap_and_a_note_without_blocking(
    pool: Pool,
) -> None:
    started = time.monotonic()
    proc, log = pool.start_inside("env01", [pool.python("env01"), "-c", FLOOD], "flood")
    assert proc.wait(timeout=60) == 0
    assert time.monotonic() - started < 30  # never held up by the log
    assert _settled(log) == PROGRAM_LOG_MAX_BYTES + len(dropped_note(PROGRAM_LOG_MAX_BYTES))
    assert log.read_bytes().endswith(dropped_note(PROGRAM_LOG_MAX_BYTES))


def test_a_stolen_program_descriptor_writes_no_more_than_the_programs_cap(pool: Pool) -> None:
    terminal_log = pool.env("env01").spec.log_dir / "terminal.log"
    thief, log = pool.start_inside("env01", [pool.python("env01"), "-c", STEAL], "thief")
    assert thief.wait(timeout=60) == 0
    assert wait_until(lambda: b"stole" in log.read_bytes(), 10, 0.05), log.read_bytes()
    assert _settled(terminal_log) <= PROGRAM_LOG_MAX_BYTES + len(
        dropped_note(PROGRAM_LOG_MAX_BYTES)
    )
    assert terminal_log.read_bytes().endswith(dropped_note(PROGRAM_LOG_MAX_BYTES))
    assert pool.env("env01").problems() == []  # the terminal was never blocked


def test_floods_in_one_environment_stop_at_its_folders_budget_and_spare_the_others(
    pool: Pool,
) -> None:
    env02_dir = pool.env("env02").spec.log_dir
    env02_before = _folder_bytes(env02_dir)
    floods = [
        pool.start_inside("env01", [pool.python("env01"), "-c", FLOOD], f"flood-{i}")
        for i in range(5)
    ]
    for proc, _ in floods:
        assert proc.wait(timeout=120) == 0
    env01_dir = floods[0][1].parent
    for _, log in floods:
        _settled(log)
    assert _folder_bytes(env01_dir) <= LOG_FOLDER_MAX_BYTES
    assert log_folder(env01_dir).used > LOG_FOLDER_MAX_BYTES - PROGRAM_LOG_MAX_BYTES
    # env02 took none of it: its folder is as it was, and it still logs and runs.
    assert _folder_bytes(env02_dir) == env02_before
    proc, log = pool.start_inside("env02", ["sh", "-c", "echo env02-still-logs"], "echo")
    assert proc.wait(timeout=30) == 0
    assert wait_until(lambda: log.read_bytes() == b"env02-still-logs\n", 10, 0.05)
    assert pool.env("env02").problems() == []


def test_a_command_run_for_its_answer_is_kept_to_the_cap_in_memory(pool: Pool) -> None:
    started = time.monotonic()
    code, output = pool.env("env01").run_inside([pool.python("env01"), "-c", FLOOD], 60)
    assert code == 0
    assert len(output) == CAPTURED_OUTPUT_MAX_BYTES
    assert time.monotonic() - started < 30
