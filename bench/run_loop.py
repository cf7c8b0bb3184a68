"""Harness loop benchmark: one full window with 3 and with 4 environments.

For each size, one `cleanroom run` loop (verify server, pool, positive control, one
window) runs in this process. Measured:

- window wall time (opened to closed: smoke rollouts, every scheduled isolation test,
  audit, canary verdict) and the whole run's wall time (with pool start and control);
- environment-hours measured per hour of wall time, over the whole run;
- the canary watcher's CPU share: its thread's CPU time (from /proc) plus the extra CPU
  of env00's own processes (its AT-SPI reader, Writer answering accessibility queries,
  its Xvfb) over their rate in an idle period before the window, with no watcher
  running: the baseline, measured in the same run;
- the token sweep's time (at the window's close, at the end, and before every reset)
  and the run's own
  controls after the window (the planted controls and every test's leaky control, as
  `cleanroom run` runs them by default), each as a share of the window's time.

Writes the ``## Harness loop`` section of bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import pwd
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console

from cleanroom.core.canary import CANARY_ENV
from cleanroom.core.isolation import SWEEP_TEST
from cleanroom.harness.loop import LoopServices, run_loop
from cleanroom.harness.own_controls import leaky_controls
from cleanroom.harness.settings import LoopConfig
from cleanroom.store.rundb import RunStore
from results_md import write_section

SECTION = "## Harness loop"
TICK = os.sysconf("SC_CLK_TCK")


def _cpu_of_stat(path: Path) -> float:
    """utime + stime, in seconds, from a /proc stat file (0 if it is gone)."""
    try:
        fields = path.read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICK


def _canary_pids(s: LoopServices) -> list[int]:
    uid = pwd.getpwnam(s.pool.places(CANARY_ENV).user).pw_uid
    pids = [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and _owner(p) == uid]
    display = s.pool.processes(CANARY_ENV)[0]  # the display server comes first
    if display.alive:
        pids.append(display.pid)
    return pids


def _owner(proc: Path) -> int:
    try:
        return proc.stat().st_uid
    except OSError:
        return -1


def _cpu(pids: list[int]) -> float:
    return sum(_cpu_of_stat(Path(f"/proc/{p}/stat")) for p in pids)


class ThreadClock:
    """Follows the canary watcher thread's CPU time from /proc while it lives (the loop
    stops the thread before its after-window steps run, so the last reading is kept)."""

    def __init__(self, name: str = "canary", every_s: float = 0.5) -> None:
        self.name = name
        self.every_s = every_s
        self.seen = False
        self.cpu = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-clock", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        if not self.seen:
            raise RuntimeError("the canary watcher thread was never seen running")
        return self.cpu

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            for t in threading.enumerate():
                if t.name == self.name and t.native_id is not None:
                    path = Path(f"/proc/self/task/{t.native_id}/stat")
                    reading = _cpu_of_stat(path)
                    if reading:
                        self.seen, self.cpu = True, max(self.cpu, reading)


@dataclass
class Probe:
    """Readings taken by the loop's before- and after-window steps."""

    idle_s: float
    idle_cpu: float = 0.0
    pids: list[int] = field(default_factory=list)
    env00_before: float = 0.0
    windows_started: float = 0.0
    clock: ThreadClock = field(default_factory=ThreadClock)
    thread_cpu: float = 0.0
    env00_after: float = 0.0
    windows_ended: float = 0.0
    controls_s: float = 0.0
    control_lines: list[str] = field(default_factory=list)

    def before(self, s: LoopServices) -> None:
        self.pids = _canary_pids(s)
        start = _cpu(self.pids)
        time.sleep(self.idle_s)  # env00 idle, no watcher yet: the baseline
        self.idle_cpu = _cpu(self.pids) - start
        self.env00_before = _cpu(self.pids)
        self.windows_started = time.monotonic()
        self.clock.start()

    def after(self, s: LoopServices) -> None:
        self.thread_cpu = self.clock.stop()
        self.env00_after = _cpu(self.pids)
        self.windows_ended = time.monotonic()

    def controls(self, s: LoopServices) -> None:
        started = time.monotonic()
        self.control_lines = leaky_controls(s, [p.name for p in s.plan])
        self.controls_s = time.monotonic() - started


def measure(envs: int, scale: float, idle_s: float) -> dict[str, float]:
    probe = Probe(idle_s)
    with tempfile.TemporaryDirectory(prefix="bench-run-loop-") as tmp:
        config = LoopConfig(run_dir=Path(tmp) / "run", envs=envs, windows=1, trials_scale=scale)
        started = time.monotonic()
        result = run_loop(
            config,
            Console(file=sys.stderr, width=120),
            before_windows=[probe.before],
            after_windows=[probe.after, probe.controls],
        )
        wall = time.monotonic() - started - idle_s  # the idle probe is not the loop's time
        sweep_s = _sweep_seconds(Path(tmp) / "run")
    if result.status != "finished" or not result.windows:
        raise SystemExit(f"{envs} environments: the run {result.status}: {result.error}")
    window = result.windows[0]
    span = probe.windows_ended - probe.windows_started
    baseline_rate = probe.idle_cpu / idle_s
    env00_extra = max(0.0, (probe.env00_after - probe.env00_before) - baseline_rate * span)
    return {
        "window_s": window.seconds,
        "run_s": wall,
        "env_hours_per_hour": envs * window.seconds / wall,
        "rows": window.verdict.rows,
        "lost": window.verdict.lost,
        "status_failed": float(window.status == "failed"),
        "thread_share": probe.thread_cpu / span,
        "canary_share": (probe.thread_cpu + env00_extra) / span,
        "env00_idle_share": baseline_rate,
        "tests": float(len(result.plan)),
        "sweep_s": sweep_s,
        "controls_s": probe.controls_s,
        "controls_fired": float(sum(1 for line in probe.control_lines if line.endswith("fired"))),
        "controls_cells": float(len(probe.control_lines)),
    }


def _sweep_seconds(run_dir: Path) -> float:
    """The token sweep's time in window 1: at its close and at the end of the run (from
    its evidence), and before every reset (timed as latencies)."""
    files = (run_dir / "evidence" / SWEEP_TEST).glob("w001-*/sweep.json")
    with RunStore.open(run_dir, owner=False) as store:
        wipes = [s.ms / 1000 for s in store.latency_samples() if s.phase == "before wipe"]
    return sum(json.loads(f.read_text())["seconds"] for f in files) + sum(wipes)


def render(rows: dict[int, dict[str, float]], command: str, scale: float) -> str:
    scaled = (
        "every scheduled test at its window trial count"
        if scale == 1
        else (f"every scheduled test at {scale:g} x its window trial count (at least 1)")
    )
    lines = [
        SECTION,
        "",
        f"Command: `{command}` ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
        f"{platform.machine()}, {len(os.sched_getaffinity(0))} cores, "
        f"Linux {platform.release()}, Python {platform.python_version()}). Other desktop "
        "tests may share the machine; the load average is given per row.",
        "",
        f"One `cleanroom run` loop per size: verify server, pool (canary + N environments "
        f"running Writer, xterm and Chromium), positive control, then one window: smoke "
        f"rollouts on every acting environment, {scaled}, the audit and the canary verdict. "
        "Environment-hours per wall hour = N x window time / run time (pool start and "
        "control included). Canary CPU share = (watcher thread CPU + env00's processes' CPU "
        "above their idle rate) / window time; the idle rate (baseline) is measured in the "
        "same run, before the window, with env00 idle and no watcher.",
        "",
        "| envs | window s | run s | env-h per wall h | rows | lost | watcher thread CPU "
        "| canary CPU (thread + env00 extra) | env00 idle CPU (baseline) | load avg |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for n, r in rows.items():
        lines.append(
            f"| {n} | {r['window_s']:.0f} | {r['run_s']:.0f} | {r['env_hours_per_hour']:.2f} | "
            f"{r['rows']:.0f} | {r['lost']:.0f} | {r['thread_share'] * 100:.2f}% | "
            f"{r['canary_share'] * 100:.2f}% | {r['env00_idle_share'] * 100:.2f}% | "
            f"{r['load']:.1f} |"
        )
    lines += [
        "",
        "The token sweep (before every reset, at the window's close and at the end of the run) and "
        "the run's own controls after the window (the sweep's, canary's, parked console's "
        "and audit's planted controls, then every planned test under one leaky setup or "
        "fault), as a share of the window's own time; env-h per wall h above counts the "
        "controls in the run's time. A 30-minute soak window is given for scale: the "
        "controls run once per run, the sweep once per window.",
        "",
        "| envs | sweep s | sweep / window | controls s | controls / window "
        "| controls / 30-min window | control cells fired |",
        "|---|---|---|---|---|---|---|",
    ]
    for n, r in rows.items():
        lines.append(
            f"| {n} | {r['sweep_s']:.2f} | {r['sweep_s'] / r['window_s'] * 100:.2f}% | "
            f"{r['controls_s']:.0f} | {r['controls_s'] / r['window_s']:.2f}x | "
            f"{r['controls_s'] / 1800 * 100:.1f}% | "
            f"{r['controls_fired']:.0f} of {r['controls_cells']:.0f} |"
        )
    if len(rows) > 1:
        lo, hi = rows[min(rows)], rows[max(rows)]
        lines += [
            "",
            f"From {min(rows)} to {max(rows)} environments the window takes "
            f"{(hi['window_s'] / lo['window_s'] - 1) * 100:+.0f}% wall time and the run "
            f"measures {(hi['env_hours_per_hour'] / lo['env_hours_per_hour'] - 1) * 100:+.0f}% "
            "environment-hours per wall hour; the canary watcher stays under "
            f"{max(r['canary_share'] for r in rows.values()) * 100:.1f}% of one core.",
        ]
    lines.append("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="3,4", help="environment counts to measure")
    parser.add_argument(
        "--trials-scale",
        type=float,
        default=1.0,
        help="scale every test's window trial count (1: a full window)",
    )
    parser.add_argument(
        "--idle-seconds",
        type=float,
        default=30.0,
        help="length of the idle baseline before the window",
    )
    args = parser.parse_args()
    rows = {}
    for n in map(int, args.sizes.split(",")):
        rows[n] = measure(n, args.trials_scale, args.idle_seconds)
        rows[n]["load"] = os.getloadavg()[1]
    command = "python bench/run_loop.py" + (
        f" --trials-scale {args.trials_scale:g}" if args.trials_scale != 1 else ""
    )
    text = render(rows, command, args.trials_scale)
    print(text)
    write_section(SECTION, text)


if __name__ == "__main__":
    main()
