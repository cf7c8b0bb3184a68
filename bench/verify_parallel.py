"""Verifications per minute with 1, 2, 4 and 8 running side by side, as ratios to one.

    .venv/bin/python bench/verify_parallel.py [--rounds 2] [--levels 1,2,4,8] [--mode sealed]
        [--no-write]

Every level verifies the same work: each example task (``examples/tasks``) with its
solution, ``--rounds`` times, in one mode (sealed by default), through the pool that
``cleanroom verify --jobs N``, the red-team matrix and the audit's local pool share
(`cleanroom.verifiers.container.side_by_side`). Images are built before any timing. For
each level the bench records the wall time, verifications per minute, the share of the
machine's CPU time that was busy (from /proc/stat) and the load average at its end, so
that the level where the machine saturates shows. The figures go to the
``## Parallel verification`` section of bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from cleanroom.core.outcomes import Outcome
from cleanroom.verifiers.container.modes import Mode
from cleanroom.verifiers.container.runtime.docker import DockerRuntime
from cleanroom.verifiers.container.side_by_side import build_images, side_by_side
from cleanroom.verifiers.container.task import Task, load_task
from cleanroom.verifiers.container.verify import AgentSpec, VerifyOptions, verify_task
from results_md import write_section

ROOT = Path(__file__).resolve().parents[1]
SECTION = "## Parallel verification"


@dataclass(frozen=True)
class Level:
    workers: int
    wall_s: float
    outcomes: tuple[str, ...]
    busy: float  # share of all cores' time that was not idle during the level
    load_end: float
    per_verify_s: float  # median of one verification's own wall time

    @property
    def per_minute(self) -> float:
        return len(self.outcomes) / self.wall_s * 60


def cpu_times() -> tuple[float, float]:
    """(busy, total) jiffies of all cores since boot."""
    fields = [float(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    total = sum(fields[:8])
    return total - idle, total


def measure(
    tasks: list[Task], runtime: DockerRuntime, workers: int, rounds: int, mode: Mode
) -> Level:
    work = [task for _ in range(rounds) for task in tasks]
    took: list[float] = []

    def one(task: Task) -> Outcome:
        started = time.monotonic()
        outcome = verify_task(task, AgentSpec.solution(), runtime, VerifyOptions(mode=mode))
        took.append(time.monotonic() - started)
        return outcome

    busy0, total0 = cpu_times()
    started = time.monotonic()
    outcomes = side_by_side(work, one, workers)
    wall = time.monotonic() - started
    busy1, total1 = cpu_times()
    level = Level(
        workers,
        wall,
        tuple(o.status.value for o in outcomes),
        (busy1 - busy0) / max(1.0, total1 - total0),
        os.getloadavg()[0],
        statistics.median(took),
    )
    print(
        f"{workers} at once: {wall:.1f} s, {level.per_minute:.1f}/min, busy {level.busy:.0%}",
        file=sys.stderr,
    )
    return level


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2, help="verifications of each task")
    parser.add_argument("--levels", default="1,2,4,8", help="how many at once, in turn")
    parser.add_argument("--mode", type=Mode, default=Mode.SEALED)
    parser.add_argument("--no-write", action="store_true", help="do not update RESULTS.md")
    args = parser.parse_args()
    levels = [int(n) for n in args.levels.split(",")]

    tasks = [load_task(p.parent) for p in sorted((ROOT / "examples" / "tasks").glob("*/task.toml"))]
    labels = {"cleanroom.bench": "1", "cleanroom.session": uuid.uuid4().hex[:12]}
    runtime = DockerRuntime.connect(labels)
    load_start = os.getloadavg()[0]
    try:
        build_images(tasks, runtime)
        # One untimed warm-up verification per task: first container starts are slower.
        side_by_side(
            tasks,
            lambda t: verify_task(t, AgentSpec.solution(), runtime, VerifyOptions(mode=args.mode)),
            2,
        )
        rows = [measure(tasks, runtime, n, args.rounds, args.mode) for n in levels]
    finally:
        runtime.remove_labelled(labels)

    text = report(rows, tasks, args, load_start)
    print(text)
    if not args.no_write:
        write_section(SECTION, text)
    return 0


def report(
    rows: list[Level], tasks: list[Task], args: argparse.Namespace, load_start: float
) -> str:
    base = rows[0].per_minute
    n = len(rows[0].outcomes)
    lines = [
        SECTION,
        "",
        f"Command: `.venv/bin/python bench/verify_parallel.py --rounds {args.rounds} "
        f"--levels {args.levels} --mode {args.mode.value}` ({datetime.now(UTC):%Y-%m-%d}, "
        f"{os.cpu_count()} cores, Linux {platform.release()}, Python {platform.python_version()}).",
        "",
        f"Each level verifies the same {n} rollouts: the {len(tasks)} example tasks with their "
        f"solutions, {args.rounds} times each, in `{args.mode.value}` mode, side by side through "
        "the pool `cleanroom verify --jobs N` uses. Images built beforehand, one warm-up "
        f"verification per task. The 1-minute load average was {load_start:.1f} at the start.",
        "",
        "| at once | wall s | verifications per minute | ratio to 1 | one verification's "
        "median s | CPU busy | load at end | outcomes |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        counts = ", ".join(f"{k} {r.outcomes.count(k)}" for k in sorted(set(r.outcomes)))
        lines.append(
            f"| {r.workers} | {r.wall_s:.1f} | {r.per_minute:.1f} | {r.per_minute / base:.2f}× | "
            f"{r.per_verify_s:.2f} | {r.busy:.0%} | {r.load_end:.1f} | {counts} |"
        )
    best = max(rows, key=lambda r: r.per_minute)
    lines += [
        "",
        f"Most verifications per minute at {best.workers} at once "
        f"({best.per_minute / base:.2f}× one at a time).",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
