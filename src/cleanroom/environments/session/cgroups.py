"""The cgroup every environment runs under, apart from the harness.

Every sandbox (an environment's, its display's) and every program container is made under
`ENVIRONMENTS` in each controller, never inside the harness's own cgroup:

- **CPU**: the group as a whole weighs `ENVIRONMENTS_CPU_SHARES`, the kernel's default,
  as much as one busy task of the harness's own cgroup: however many environments are
  busy, a harness thread (the canary's watcher is one) keeps at least half a contended
  core. Inside the group each sandbox has its own weight (`SandboxLimits`: 512, the
  canary 2048), so a busy environment takes a quarter of what the canary may.
- **Memory**: the group may take the machine's memory less the harness's reserve
  (`PoolConfig.harness_reserve_mib`): when the environments together run out, the kernel
  ends a process of theirs, never the harness. The harness's own OOM score is lowered as
  well, for memory pressure from outside the pool.

Made once per harness process, idempotent; two harnesses on one machine share it.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path

from cleanroom.core.breakage import MemoryCount

CGROUP_FS = Path("/sys/fs/cgroup")
ENVIRONMENTS = "/cleanroom"
ENVIRONMENTS_CPU_SHARES = 1024
HARNESS_OOM_SCORE_ADJ = -500
_V1_CONTROLLERS = ("cpu", "memory", "pids")
_MIB = 1024 * 1024


@dataclass(frozen=True)
class EnvironmentsGroup:
    """What the environments' group holds them to (None: could not be set here)."""

    path: str
    memory_bytes: int | None
    cpu_shares: int | None
    problems: tuple[str, ...] = ()

    def describe(self) -> dict[str, object]:
        return {
            "path": self.path,
            "memory_mib": self.memory_bytes // _MIB if self.memory_bytes else None,
            "cpu_shares": self.cpu_shares,
            "problems": list(self.problems),
        }


def sandbox_cgroup(container: str) -> str:
    """The cgroup path of one sandbox (``runc``'s ``cgroupsPath``)."""
    return f"{ENVIRONMENTS}/{container}"


def memory_count(container: str) -> MemoryCount | None:
    """What the memory controller counted for one sandbox or program container (its
    cgroup under `ENVIRONMENTS`, named by the container): whether it reached its own
    limit and how many of its processes the kernel ended for memory. None when the
    cgroup is gone or its counters cannot be read."""
    relative = sandbox_cgroup(container).lstrip("/")
    if (CGROUP_FS / "cgroup.controllers").exists():  # v2: the local events are its own
        group = CGROUP_FS / relative
        local = _counters(group / "memory.events.local")
        events = _counters(group / "memory.events")
        if local is None or events is None:
            return None
        return MemoryCount(local.get("max", 0) + local.get("oom", 0) > 0, events.get("oom_kill", 0))
    group = CGROUP_FS / "memory" / relative
    control = _counters(group / "memory.oom_control")
    failed = [_number(group / name) for name in ("memory.failcnt", "memory.memsw.failcnt")]
    if control is None or failed[0] is None:
        return None
    # The fail counter counts the times this cgroup's own limit was reached: the shared
    # group's or the machine's shortage counts on them, not here.
    return MemoryCount(any(n for n in failed if n), control.get("oom_kill", 0))


def _counters(path: Path) -> dict[str, int] | None:
    """A flat keyed file of the kernel's (``name value`` lines)."""
    try:
        text = path.read_text()
    except OSError:
        return None
    out = {}
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        with contextlib.suppress(ValueError):
            out[name] = int(value)
    return out


def _number(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def machine_memory_bytes() -> int:
    with open("/proc/meminfo") as info:
        for line in info:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    raise OSError("/proc/meminfo names no MemTotal")


def prepare_environments_group(harness_reserve_mib: int) -> EnvironmentsGroup:
    """Make the environments' group (or find it made) and set its weight and memory."""
    budget = max(machine_memory_bytes() - harness_reserve_mib * _MIB, 256 * _MIB)
    problems: list[str] = []
    if (CGROUP_FS / "cgroup.controllers").exists():  # the unified hierarchy (v2)
        group = CGROUP_FS / ENVIRONMENTS.lstrip("/")
        with contextlib.suppress(OSError):
            (CGROUP_FS / "cgroup.subtree_control").write_text("+cpu +memory +pids")
        group.mkdir(exist_ok=True)
        weight = 1 + ((ENVIRONMENTS_CPU_SHARES - 2) * 9999) // 262142  # shares to weight
        shares = _write(group / "cpu.weight", str(weight), problems) and ENVIRONMENTS_CPU_SHARES
        memory = _write(group / "memory.max", str(budget), problems) and budget
    else:
        for controller in _V1_CONTROLLERS:
            (CGROUP_FS / controller / ENVIRONMENTS.lstrip("/")).mkdir(exist_ok=True)
        cpu = CGROUP_FS / "cpu" / ENVIRONMENTS.lstrip("/")
        mem = CGROUP_FS / "memory" / ENVIRONMENTS.lstrip("/")
        shares = _write(cpu / "cpu.shares", str(ENVIRONMENTS_CPU_SHARES), problems) and (
            ENVIRONMENTS_CPU_SHARES
        )
        memory = _write(mem / "memory.limit_in_bytes", str(budget), problems) and budget
    return EnvironmentsGroup(ENVIRONMENTS, memory or None, shares or None, tuple(problems))


def protect_harness() -> int | None:
    """Lower this process's OOM score to `HARNESS_OOM_SCORE_ADJ` (never raise it);
    return the score it now has."""
    path = Path("/proc/self/oom_score_adj")
    try:
        now = int(path.read_text().strip())
        if now > HARNESS_OOM_SCORE_ADJ:
            path.write_text(str(HARNESS_OOM_SCORE_ADJ))
            now = HARNESS_OOM_SCORE_ADJ
    except (OSError, ValueError):
        return None
    return now


def _write(path: Path, value: str, problems: list[str]) -> bool:
    try:
        path.write_text(value)
    except OSError as exc:
        # A memory limit below what the group already holds is refused (EBUSY): the
        # environments of another harness are using it; its value stays.
        problems.append(f"cannot set {path}: {exc.strerror}")
        return False
    return True
