"""What a desktop environment's processes hold and spend, read from /proc: shared by the
benches that measure environments (`environments.py`, `apps.py`)."""

from __future__ import annotations

import os
from pathlib import Path

from cleanroom.environments.pool.environment import DesktopEnvironment
from cleanroom.environments.session.processes import pids_of_uid, process_tree

_TICK = os.sysconf("SC_CLK_TCK")


def _proc_kb(path: str, key: str) -> float:
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(key):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError):
        pass
    return 0.0


def rss_mb(pid: int) -> float:
    return _proc_kb(f"/proc/{pid}/status", "VmRSS:")


def pss_mb(pid: int) -> float:
    """Proportional set size: each shared page divided among the processes mapping it,
    so the environments' figures add up to what they cost together."""
    return _proc_kb(f"/proc/{pid}/smaps_rollup", "Pss:")


def cpu_s(pid: int) -> float:
    """The process's CPU time and that of its children it has reaped."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return sum(int(f) for f in fields[11:15]) / _TICK  # utime stime cutime cstime


def env_pids(env: DesktopEnvironment) -> list[int]:
    """The environment's processes: its user's (in its sandbox or its container), its
    display server and its sandboxes' first processes."""
    pids = list(pids_of_uid(env.account.uid))
    live = env.running
    if live is None:
        return pids
    display = live.display
    pids.append(display.pid)
    if display.sandbox is not None:  # the server itself and its sandbox's first processes
        pids += [p for p in process_tree(display.sandbox.init_pid) if p not in pids]
        leader = getattr(display.proc, "group_leader", lambda: None)()
        if leader:
            pids += [p for p in process_tree(leader) if p not in pids]
    if live.session.sandbox is not None:  # its first processes (tini and what it waits on)
        pids += [p for p in process_tree(live.session.sandbox.init_pid) if p not in pids]
    return pids
