"""Benchmark of the desktop environment pool: start, reset, screenshot latency, memory,
with 1, 2 and 4 environments (plus the canary), against a bare-Xvfb baseline measured in
the same run, with the programs on the host and (``--modes``) in one container per
environment. Writes the ``## Desktop environments`` section of bench/RESULTS.md.

    .venv/bin/python bench/environments.py [--sizes 1,2,4] [--resets 3] [--shots 100]
        [--modes plain,containers]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

from cleanroom.environments.pool.pool import Pool, PoolConfig
from cleanroom.environments.session.processes import pids_of_uid
from cleanroom.environments.x11.display import XvfbDisplay
from cleanroom.environments.x11.screen import Screen
from results_md import write_section

SECTION = "## Desktop environments"


def _proc_kb(path: str, key: str) -> float:
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(key):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError):
        pass
    return 0.0


def _rss_mb(pid: int) -> float:
    return _proc_kb(f"/proc/{pid}/status", "VmRSS:")


def _pss_mb(pid: int) -> float:
    """Proportional set size: each shared page divided among the processes mapping it,
    so the environments' figures add up to what they cost together."""
    return _proc_kb(f"/proc/{pid}/smaps_rollup", "Pss:")


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def baseline(shots: int) -> dict[str, float]:
    """A bare Xvfb: start time and screenshot latency, nothing else running on it."""
    starts = []
    for _ in range(3):
        t = time.monotonic()
        d = XvfbDisplay.start(Path(tempfile.mkdtemp()) / "auth")
        starts.append(time.monotonic() - t)
        d.stop()
    d = XvfbDisplay.start(Path(tempfile.mkdtemp()) / "auth")
    try:
        screen = Screen(d.name)
        lat = []
        for _ in range(shots):
            t = time.monotonic()
            screen.screenshot_png()
            lat.append(time.monotonic() - t)
        screen.close()
    finally:
        d.stop()
    return {
        "start": statistics.median(starts),
        "shot_med": statistics.median(lat),
        "shot_p95": _p95(lat),
    }


def measure(n: int, resets: int, shots: int, containers: bool = False) -> dict[str, float]:
    run = Path(tempfile.mkdtemp(prefix="bench-envs-"))
    pool = Pool(PoolConfig(envs=n, containers=containers), run)
    t = time.monotonic()
    pool.start()
    start = time.monotonic() - t
    try:
        reset_times = []
        for _ in range(resets):
            t = time.monotonic()
            pool.reset("env01")
            reset_times.append(time.monotonic() - t)
        lat = []
        names = [x for x in pool.names if x != "env00"]
        for i in range(shots):
            name = names[i % len(names)]
            t = time.monotonic()
            pool.observe(name, pool.generation(name), "screenshot")
            lat.append(time.monotonic() - t)
        mem, pss = [], []
        for name in names:
            env = pool.env(name)
            pids = list(pids_of_uid(env.account.uid))
            if env.display is not None:
                pids.append(env.display.pid)
            sandbox = env.session.sandbox if env.session is not None else None
            if sandbox is not None:  # its first process and the unshare that waits for it
                pids += [sandbox.init_pid, sandbox.proc.pid]
            mem.append(sum(_rss_mb(p) for p in pids))
            pss.append(sum(_pss_mb(p) for p in pids))
    finally:
        pool.stop()
    return {
        "start": start,
        "reset_med": statistics.median(reset_times),
        "reset_max": max(reset_times),
        "shot_med": statistics.median(lat),
        "shot_p95": _p95(lat),
        "mem": statistics.mean(mem),
        "pss": statistics.mean(pss),
    }


def render(
    base: dict[str, float],
    by_mode: dict[str, dict[int, dict[str, float]]],
    command: str,
    load: tuple[float, float],
) -> str:
    lines = [
        SECTION,
        "",
        f"Command: `{command}` ({time.strftime('%Y-%m-%d')}, {platform.machine()}, "
        f"{len(__import__('os').sched_getaffinity(0))} cores, Linux {platform.release()}). "
        "Each environment runs Writer, xterm and Chromium as its own user on its own "
        "1280x800 Xvfb, in a sandbox of its own (IPC, PID, network, mount and UTS "
        "namespaces; a reset ends it and makes a new one); the canary runs Writer. "
        "Screenshot = capture + PNG encode through "
        "the pool's observation path, round-robin over the environments.",
        "",
        f"Baseline (same run): bare Xvfb start {base['start'] * 1000:.0f} ms; bare-display "
        f"screenshot median {base['shot_med'] * 1000:.1f} ms, "
        f"p95 {base['shot_p95'] * 1000:.1f} ms. Memory: the summed RSS of the environment's "
        "processes, its Xvfb and its sandbox's first process (shared pages count once per "
        "process, so it overcounts), and their summed PSS (each shared page divided among "
        "the processes that map it, the environments' own cost); environments in 24 GB = "
        "24 GiB / PSS, leaving out the harness and the kernel. In `containers` mode each "
        "environment's programs run in a container of their own (no network, only their "
        "own X socket, home and runtime folder); a reset removes the container and starts "
        "a fresh one. The 1-minute load "
        f"average was {load[0]:.1f} when the run began and {load[1]:.1f} when it ended "
        "(other work shared the machine).",
        "",
        "| mode | envs | pool start s | reset median s | reset max s | shot median ms "
        "| shot p95 ms | p95 / bare p95 | RSS per env MB | PSS per env MB | envs in 24 GB |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for mode, rows in by_mode.items():
        for n, r in rows.items():
            lines.append(
                f"| {mode} | {n} | {r['start']:.1f} | {r['reset_med']:.2f} | "
                f"{r['reset_max']:.2f} | {r['shot_med'] * 1000:.1f} | "
                f"{r['shot_p95'] * 1000:.1f} | {r['shot_p95'] / base['shot_p95']:.2f} | "
                f"{r['mem']:.0f} | {r['pss']:.0f} | {int(24 * 1024 // r['pss'])} |"
            )
    lines.append("")
    for mode, rows in by_mode.items():
        top_n = max(rows)
        top = rows[top_n]
        lines.append(
            f"Aim with 4 environments ({mode}, measured with {top_n}): reset under 3 s "
            f"(measured {top['reset_med']:.2f} s median), screenshot p95 under 100 ms "
            f"(measured {top['shot_p95'] * 1000:.1f} ms)."
        )
    lines.append("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1,2,4")
    parser.add_argument("--resets", type=int, default=3)
    parser.add_argument("--shots", type=int, default=100)
    parser.add_argument("--modes", default="plain,containers")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    base = baseline(args.shots)
    sizes = list(map(int, args.sizes.split(",")))
    by_mode = {
        mode: {n: measure(n, args.resets, args.shots, mode == "containers") for n in sizes}
        for mode in args.modes.split(",")
    }
    text = render(base, by_mode, "python bench/environments.py", (load_before, os.getloadavg()[0]))
    print(text)
    write_section(SECTION, text)


if __name__ == "__main__":
    main()
