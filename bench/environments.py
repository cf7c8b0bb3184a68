"""Benchmark of the desktop environment pool: start, reset, screenshot latency, memory,
with 1, 2 and 4 environments (plus the canary), against a bare-Xvfb baseline measured in
the same run, with the programs on the host and (``--modes``) in one container per
environment, each with and without warm standby (``--standby``). Writes the
``## Desktop environments`` section of bench/RESULTS.md.

    .venv/bin/python bench/environments.py [--sizes 1,2,4] [--resets 3] [--shots 100]
        [--modes plain,containers] [--standby off,on]

With warm standby a reset swaps in a spare slot; each reset is timed once the spare is up
(as in a run, where a rollout lasts longer than a spare takes to come up), and the time
from the reset's return until the next spare is up is given beside it: resets of one
environment closer together than that wait for the spare.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

from cleanroom.environments.interface import Screenshot
from cleanroom.environments.pool.plan import PoolConfig
from cleanroom.environments.pool.pool import Pool
from cleanroom.environments.x11.display import XvfbDisplay
from cleanroom.environments.x11.screen import Screen
from env_procs import env_pids, pss_mb, rss_mb
from results_md import write_section

SECTION = "## Desktop environments"


def _busy_s() -> float:
    """Seconds of CPU time all cores have spent busy since boot (from /proc/stat)."""
    fields = [float(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle and iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


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


def measure(
    n: int, resets: int, shots: int, containers: bool = False, standby: bool = False
) -> dict[str, float]:
    run = Path(tempfile.mkdtemp(prefix="bench-envs-"))
    pool = Pool(PoolConfig(envs=n, containers=containers, warm_standby=standby), run)
    t, busy = time.monotonic(), _busy_s()
    pool.start()
    start = time.monotonic() - t
    start_cpu = _busy_s() - busy
    try:
        reset_times, refill_times = [], []
        for _ in range(resets):
            if standby and not pool.standby_ready("env01", 180):
                raise RuntimeError(f"env01's spare did not come up: {pool.describe()}")
            t = time.monotonic()
            pool.reset("env01")
            reset_times.append(time.monotonic() - t)
            if standby:
                t = time.monotonic()
                pool.standby_ready("env01", 180)
                refill_times.append(time.monotonic() - t)
        for name in pool.names:  # every spare up: the memory below counts them
            if standby and name != "env00":
                pool.standby_ready(name, 180)
        lat = []
        names = [x for x in pool.names if x != "env00"]
        for i in range(shots):
            name = names[i % len(names)]
            t = time.monotonic()
            pool.observe(name, pool.generation(name), Screenshot)
            lat.append(time.monotonic() - t)
        mem, pss, spare_pss = [], [], []
        for name in names:
            pids = env_pids(pool.env(name))
            mem.append(sum(rss_mb(p) for p in pids))
            pss.append(sum(pss_mb(p) for p in pids))
            spare = pool.life.standby.spare(name) if pool.life.standby is not None else None
            if spare is not None:
                spare_pss.append(sum(pss_mb(p) for p in env_pids(spare)))
    finally:
        pool.stop()
    return {
        "start": start,
        "start_cpu": start_cpu,
        "reset_med": statistics.median(reset_times),
        "reset_max": max(reset_times),
        "refill_med": statistics.median(refill_times) if refill_times else 0.0,
        "spare_pss": statistics.mean(spare_pss) if spare_pss else 0.0,
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
        "1280x800 Xvfb, in a sandbox of its own (runc: IPC, PID, network, mount and UTS "
        "namespaces, its own overlay root, a cgroup with limits, the system call filter; "
        "a reset ends it and makes a new one); the canary runs Writer. "
        "Screenshot = capture + PNG encode through "
        "the pool's observation path, round-robin over the environments.",
        "",
        f"Baseline (same run): bare Xvfb start {base['start'] * 1000:.0f} ms; bare-display "
        f"screenshot median {base['shot_med'] * 1000:.1f} ms, "
        f"p95 {base['shot_p95'] * 1000:.1f} ms. Memory: the summed RSS of the environment's "
        "processes, its Xvfb and its sandbox's first processes (shared pages count once per "
        "process, so it overcounts), and their summed PSS (each shared page divided among "
        "the processes that map it, the environments' own cost); environments in 24 GB = "
        "24 GiB / PSS, leaving out the harness and the kernel. 'Start CPU s' is the CPU time "
        "the whole machine spent busy while the pool started; divided by the cores it is "
        "the shortest start the machine allows for that work. In `containers` mode each "
        "environment's programs run in a container of their own (no network, only their "
        "own X socket, home and runtime folder); a reset removes the container and starts "
        "a fresh one. With warm standby (`+ standby`) every acting environment keeps a "
        "spare slot up (its own user, home, display, sandbox and programs) and a reset swaps "
        "it in; each reset is timed with the spare up, and 'spare up after' is the time "
        "from the reset's return until the next spare is up. 'PSS per env' counts the "
        "slot in use; envs in 24 GB counts both slots. The 1-minute load "
        f"average was {load[0]:.1f} when the run began and {load[1]:.1f} when it ended "
        "(other work shared the machine).",
        "",
        "| mode | envs | pool start s | start CPU s | reset median s | reset max s "
        "| spare up after s | shot median ms | shot p95 ms | p95 / bare p95 | RSS per env MB "
        "| PSS per env MB | spare PSS MB | envs in 24 GB |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for mode, rows in by_mode.items():
        for n, r in rows.items():
            spare = f"{r['refill_med']:.2f}" if r["refill_med"] else "-"
            spare_pss = f"{r['spare_pss']:.0f}" if r["spare_pss"] else "-"
            lines.append(
                f"| {mode} | {n} | {r['start']:.1f} | {r['start_cpu']:.1f} | "
                f"{r['reset_med']:.2f} | "
                f"{r['reset_max']:.2f} | {spare} | {r['shot_med'] * 1000:.1f} | "
                f"{r['shot_p95'] * 1000:.1f} | {r['shot_p95'] / base['shot_p95']:.2f} | "
                f"{r['mem']:.0f} | {r['pss']:.0f} | {spare_pss} | "
                f"{int(24 * 1024 // (r['pss'] + r['spare_pss']))} |"
            )
    lines.append("")
    for mode, rows in by_mode.items():
        top_n = max(rows)
        top = rows[top_n]
        aim = 2.0 if mode.startswith("containers") else 1.0
        lines.append(
            f"Aim with 4 environments ({mode}, measured with {top_n}): reset under {aim:g} s "
            f"(measured {top['reset_med']:.2f} s median), pool start under 10 s (measured "
            f"{top['start']:.1f} s), PSS under 600 MB per environment (measured "
            f"{top['pss']:.0f} MB), screenshot p95 under 100 ms "
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
    parser.add_argument("--standby", default="off,on")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    base = baseline(args.shots)
    sizes = list(map(int, args.sizes.split(",")))
    by_mode = {
        mode + (" + standby" if standby == "on" else ""): {
            n: measure(n, args.resets, args.shots, mode == "containers", standby == "on")
            for n in sizes
        }
        for mode in args.modes.split(",")
        for standby in args.standby.split(",")
    }
    command = "python bench/environments.py"
    if len(sys.argv) > 1:
        command += " " + " ".join(sys.argv[1:])
    text = render(base, by_mode, command, (load_before, os.getloadavg()[0]))
    print(text)
    # The runs before stay below, as ### subsections, to compare against.
    write_section(SECTION, text, keep_history=True)


if __name__ == "__main__":
    main()
