"""Finding and ending processes by owner or by group, always by pid."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterable
from pathlib import Path

from cleanroom.lifecycle import alive, start_time, wait_until

__all__ = ["alive", "start_time"]  # where the pool's code has always found them


def pids_of_uid(uid: int) -> list[int]:
    """Every live process whose real uid is ``uid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            for line in (entry / "status").read_text().splitlines():
                if line.startswith("Uid:"):
                    if int(line.split()[1]) == uid:
                        found.append(int(entry.name))
                    break
        except (FileNotFoundError, ProcessLookupError, PermissionError, ValueError):
            continue
    return found


def kill_pids(pids: list[int], *, grace_s: float = 1.0) -> None:
    """SIGTERM each pid, then SIGKILL whatever is left after ``grace_s``."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGTERM)
    wait_until(lambda: not any(alive(p) for p in pids), grace_s, 0.02)
    for pid in pids:
        if alive(pid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


def kill_uid(uid: int, *, grace_s: float = 1.0) -> None:
    """End every process of one (pool-created) user, repeating until none is left."""
    if uid == 0:
        raise ValueError("refusing to kill every process of root")
    for _ in range(5):
        pids = pids_of_uid(uid)
        if not pids:
            return
        kill_pids(pids, grace_s=grace_s)


def process_tree(pid: int) -> list[int]:
    """``pid`` and every live descendant of it."""
    return process_trees([pid])[pid]


def process_trees(pids: Iterable[int]) -> dict[int, list[int]]:
    """Each of ``pids`` with every live descendant of it, from one look at ``/proc``."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    trees = {}
    for pid in pids:
        tree, todo = [], [pid]
        while todo:
            current = todo.pop()
            tree.append(current)
            todo.extend(children.get(current, []))
        trees[pid] = tree
    return trees


def pid_namespace(pid: int) -> int | None:
    """The inode of ``pid``'s PID namespace (None if the process is gone)."""
    try:
        return os.stat(f"/proc/{pid}/ns/pid").st_ino
    except OSError:
        return None


def namespace_pids(pid: int) -> list[int]:
    """``pid`` as each PID namespace it lives in numbers it, outermost (the host's) first."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("NSpid:"):
                return [int(n) for n in line.split()[1:]]
    except (OSError, ValueError):
        pass
    return []
