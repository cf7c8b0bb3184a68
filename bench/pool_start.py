"""Where a pool's start spends its CPU: the wall time and the CPU-seconds of a pool of N
environments (plain), itemized by program (every live process of the environments'
users, their display servers' users and their sandboxes, by command name), by sandbox
(each sandbox's cgroup counts what its processes spent, the exited ones too), and the
harness's own work (its threads and the commands it ran and reaped). Writes the
``## Pool start`` section of bench/RESULTS.md.

    .venv/bin/python bench/pool_start.py [--envs 4] [--repeats 1]
"""

from __future__ import annotations

import argparse
import collections
import os
import platform
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from cleanroom.environments.pool.plan import PoolConfig
from cleanroom.environments.pool.pool import Pool
from cleanroom.environments.session.cgroups import CGROUP_FS, sandbox_cgroup
from env_procs import cpu_s, env_pids
from environments import _busy_s
from results_md import write_section

SECTION = "## Pool start"
_TICK = os.sysconf("SC_CLK_TCK")


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return "?"


def _sandbox_cpu_s(container: str) -> float:
    """What a sandbox's cgroup spent (cgroup v1 cpuacct or v2 cpu.stat); 0 if unreadable."""
    relative = sandbox_cgroup(container).lstrip("/")
    try:
        if (CGROUP_FS / "cgroup.controllers").exists():
            for line in (CGROUP_FS / relative / "cpu.stat").read_text().splitlines():
                if line.startswith("usage_usec"):
                    return int(line.split()[1]) / 1e6
            return 0.0
        return int((CGROUP_FS / "cpuacct" / relative / "cpuacct.usage").read_text()) / 1e9
    except (OSError, ValueError):
        return 0.0


@dataclass(frozen=True)
class StartRun:
    """One pool start: its wall time, the machine's busy CPU, the harness's own and its
    commands', and the environments' CPU by program, by environment and by sandbox."""

    wall: float
    busy: float
    harness: float
    harness_children: float
    by_program: dict[str, float]
    by_env: dict[str, float]
    by_sandbox: dict[str, float]


def measure(n: int) -> StartRun:
    """Start a pool of ``n`` and itemize the CPU it took, read the moment it is ready."""
    run = Path(tempfile.mkdtemp(prefix="bench-start-"))
    pool = Pool(PoolConfig(envs=n), run)
    own0 = os.times()
    t, busy = time.monotonic(), _busy_s()
    pool.start()
    wall = time.monotonic() - t
    busy_s = _busy_s() - busy
    own1 = os.times()
    try:
        by_program: collections.defaultdict[str, float] = collections.defaultdict(float)
        by_env: dict[str, float] = {}
        by_sandbox: dict[str, float] = {}
        for name in pool.names:
            env = pool.env(name)
            pids = set(env_pids(env))
            total = 0.0
            for pid in pids:
                spent = cpu_s(pid)
                by_program[_comm(pid)] += spent
                total += spent
            by_env[name] = total
            live = env.running
            if live is not None:
                for kind, sandbox in (
                    ("display", live.display.sandbox),
                    ("session", live.session.sandbox),
                ):
                    if sandbox is not None:
                        by_sandbox[f"{name} {kind}"] = _sandbox_cpu_s(sandbox.stage.container)
    finally:
        pool.stop()
    harness_self = (own1.user - own0.user) + (own1.system - own0.system)
    harness_children = (own1.children_user - own0.children_user) + (
        own1.children_system - own0.children_system
    )
    return StartRun(
        wall, busy_s, harness_self, harness_children, dict(by_program), by_env, by_sandbox
    )


def render(n: int, runs: list[StartRun]) -> str:
    """The section: wall and CPU per run, then the last run itemized."""
    load = os.getloadavg()[0]
    lines = [
        SECTION,
        "",
        f"Command: `python bench/pool_start.py --envs {n}` ({time.strftime('%Y-%m-%d')}, "
        f"{platform.machine()}, {os.cpu_count()} cores; 1-minute load {load:.1f} at the end). "
        f"A pool of {n} environments and the canary, plain mode. 'Machine CPU s' is what "
        "every core spent busy while the pool started (other work included); the "
        "itemized figures are read the moment the pool is ready.",
        "",
        "| run | pool start s | machine CPU s | per env CPU s | harness s | its commands s |",
        "|---|---|---|---|---|---|",
    ]
    for i, r in enumerate(runs, 1):
        lines.append(
            f"| {i} | {r.wall:.1f} | {r.busy:.1f} | {r.busy / (n + 1):.1f} | "
            f"{r.harness:.1f} | {r.harness_children:.1f} |"
        )
    last = runs[-1]
    programs = sorted(last.by_program.items(), key=lambda kv: -kv[1])
    lines += ["", "| program (all environments) | CPU s |", "|---|---|"]
    lines += [f"| {name} | {spent:.2f} |" for name, spent in programs if spent >= 0.05]
    sandboxes = last.by_sandbox
    lines += ["", "| sandbox | CPU s |", "|---|---|"]
    lines += [f"| {k} | {v:.2f} |" for k, v in sorted(sandboxes.items())]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--envs", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--write", action="store_true", help="update bench/RESULTS.md")
    args = parser.parse_args()
    runs = [measure(args.envs) for _ in range(args.repeats)]
    text = render(args.envs, runs)
    print(text)
    print("median wall", statistics.median(r.wall for r in runs))
    if args.write:
        write_section(SECTION, text)


if __name__ == "__main__":
    main()
