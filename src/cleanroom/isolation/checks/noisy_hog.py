"""The noisy neighbour's hog: run inside one environment, as its user, in its session.

Standard library only (it runs under the environment's own ``python3 -I``). Given one
JSON argument (``cpu_procs``, ``memory_mib``, ``tasks``, ``tmp_mib``, ``tmp``,
``home_mib``, ``home``, ``hold_s``), it takes all at once, each a little past what the
environment may take:

- CPU: ``cpu_procs`` processes that never stop computing;
- memory: a child that touches ``memory_mib`` MiB, 16 MiB at a time, saying how much it
  holds after each step (the kernel may kill it at its cgroup's limit: what it said last
  is what it held);
- tasks: threads up to ``tasks`` (a pids limit counts threads), until one cannot start;
- disk: a file in its private ``tmp`` up to ``tmp_mib`` MiB, until the tmpfs is full,
  and one in its ``home`` up to ``home_mib`` MiB, until the home's file system is.

It holds everything for ``hold_s`` seconds, prints one JSON line of what it held, then
gives it all back. Nothing outlives it by more than its alarm.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import sys
import threading
import time

CHUNK_MIB = 16
PAGE = 4096


def _never_outlive(seconds: float) -> None:
    signal.alarm(int(seconds) + 30)


def _burn(hold_s: float) -> None:
    _never_outlive(hold_s)
    while True:
        pass


def _hold_memory(mib: int, report: int, hold_s: float) -> None:
    _never_outlive(hold_s)
    held = []
    for step in range(mib // CHUNK_MIB):
        chunk = bytearray(CHUNK_MIB << 20)
        chunk[::PAGE] = b"x" * len(chunk[::PAGE])  # every page touched, so it is charged
        held.append(chunk)
        os.write(report, b"%d\n" % ((step + 1) * CHUNK_MIB))
    os.write(report, b"all\n")
    time.sleep(hold_s)
    os._exit(0)


def _read_memory(fd: int, until: float) -> int:
    """The last amount the memory child said it held, read until it said all or died."""
    held, data = 0, b""
    while time.monotonic() < until:
        ready, _, _ = select.select([fd], [], [], max(0.0, until - time.monotonic()))
        if not ready:
            break
        chunk = os.read(fd, 4096)
        if not chunk:
            break  # the child is gone (killed at the limit)
        data += chunk
        *lines, data = data.split(b"\n")
        for line in lines:
            if line == b"all":
                return held
            with contextlib.suppress(ValueError):
                held = int(line)
    return held


def _fill(path: str, mib: int) -> int:
    """Write up to ``mib`` MiB to ``path``; return the whole MiB that went in before it
    was full."""
    written = 0
    block = b"\0" * (1 << 20)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        try:
            for _ in range(mib):
                written += os.write(fd, block)
        finally:
            os.close(fd)
    except OSError:
        pass  # full: what was written is what it took
    return written >> 20


def main(cfg: dict) -> None:
    hold_s = float(cfg["hold_s"])
    children = []
    for _ in range(int(cfg["cpu_procs"])):
        pid = os.fork()
        if pid == 0:
            _burn(hold_s)
        children.append(pid)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        _hold_memory(int(cfg["memory_mib"]), write_end, hold_s)
    os.close(write_end)
    children.append(pid)

    stop = threading.Event()
    threading.stack_size(64 * 1024)
    tasks = 0
    for _ in range(int(cfg["tasks"])):
        try:
            threading.Thread(target=stop.wait, daemon=True).start()
        except RuntimeError:
            break  # no more tasks for this cgroup
        tasks += 1

    tmp_file = os.path.join(cfg["tmp"], "cleanroom-noisy-hog")
    home_file = os.path.join(cfg["home"], "cleanroom-noisy-hog")
    tmp_written = _fill(tmp_file, int(cfg["tmp_mib"]))
    home_written = _fill(home_file, int(cfg["home_mib"]))

    memory = _read_memory(read_end, time.monotonic() + hold_s + 30)
    time.sleep(hold_s)
    held = {"memory_mib": memory, "tasks": tasks, "tmp_mib": tmp_written}
    print(json.dumps({**held, "home_mib": home_written}), flush=True)
    stop.set()
    for path in (tmp_file, home_file):
        with contextlib.suppress(OSError):
            os.unlink(path)
    for child in children:
        with contextlib.suppress(OSError):
            os.kill(child, signal.SIGKILL)
    for child in children:
        with contextlib.suppress(OSError):
            os.waitpid(child, 0)


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
