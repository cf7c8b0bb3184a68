"""Audit throughput: tasks per hour with the local pool at 1, 2 and 4 workers, and with
Ray on a two-node cluster on this machine, as ratios to the one-worker run.

    .venv/bin/python bench/audit.py [--tasks DIR] [--repeats 3] [--no-write]
        [--image-map FROM=TO ...] [--corpus NAME]

Every configuration audits the same tasks (the example tasks by default, whichever
exist) with the audit's default checks, into a fresh run folder. The tasks' images are
built once before any timing, so every configuration reuses them (a task whose image
does not build is timed as the audit finds it: a build that fails again). The Ray
cluster is a head and a second node on 127.0.0.1 (`cleanroom.ray_cluster.local`), one
Docker slot each, so two jobs at once, as with two local workers. The figures and the
flags found per category are written to the ``## Audit`` section of bench/RESULTS.md, or,
with ``--corpus NAME`` (tasks written elsewhere, adapted only by ``--image-map``), to
``## Audit of a public corpus``, with every task's flags.
"""

from __future__ import annotations

import argparse
import functools
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from cleanroom.audit.job import AuditSettings
from cleanroom.audit.jobs import JobKind, find_jobs
from cleanroom.audit.pool import JobPool, LocalPool
from cleanroom.audit.ray_pool import RayPool
from cleanroom.audit.run import run_audit
from cleanroom.audit.summary import AuditSummary
from cleanroom.cli.verify import parse_image_map
from cleanroom.ray_cluster.local import LocalCluster
from cleanroom.verifiers.container.runtime.docker import DockerRuntime
from cleanroom.verifiers.container.task import load_task
from results_md import write_section

ROOT = Path(__file__).resolve().parents[1]
SECTION = "## Audit"
CORPUS_SECTION = "## Audit of a public corpus"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=Path, default=ROOT / "examples" / "tasks")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-write", action="store_true", help="do not update RESULTS.md")
    parser.add_argument("--image-map", action="append", default=[], metavar="FROM=TO")
    parser.add_argument("--corpus", metavar="NAME", help="where the tasks come from")
    parser.add_argument("--workers", default="1,2,4", help="local pool sizes to measure")
    args = parser.parse_args()
    image_map = parse_image_map(args.image_map)
    settings = AuditSettings(repeats=args.repeats, image_map=image_map)
    jobs = find_jobs([args.tasks])
    runtime = DockerRuntime.connect()
    for job in jobs:  # built once, untimed: every configuration reuses the images
        if job.kind is JobKind.CONTAINER:
            started = time.monotonic()
            try:
                runtime.images.for_task(load_task(Path(job.path)), dict(image_map))
                built = "built"
            except Exception as exc:  # the audit records it as the task's own finding
                built = f"does not build ({type(exc).__name__})"
            print(f"{job.name}: {built} in {time.monotonic() - started:.0f} s", file=sys.stderr)

    rows: list[Row] = []
    for workers in (int(w) for w in args.workers.split(",")):
        rows.append(
            measure(
                f"local pool, {workers} worker(s)",
                args.tasks,
                settings,
                functools.partial(LocalPool, workers),
            )
        )
    cluster = LocalCluster.start(["", ""], docker_slots=1, python_path=str(ROOT / "src"))
    try:
        rows.append(
            measure(
                "Ray, two nodes x 1 Docker slot",
                args.tasks,
                settings,
                lambda: RayPool(cluster.address),
            )
        )
    finally:
        cluster.stop()

    text = report(rows, len(jobs), args)
    print(text)
    if not args.no_write:
        write_section(CORPUS_SECTION if args.corpus else SECTION, text)
    return 0


Row = tuple[str, float, AuditSummary, float]


def measure(label: str, tasks: Path, settings: AuditSettings, pool: Callable[[], JobPool]) -> Row:
    """One whole audit into a fresh run folder: its wall time, its results, and the
    machine's 1-minute load average at its end (others' work on a shared machine)."""
    with tempfile.TemporaryDirectory(prefix="cleanroom-bench-audit-") as run_dir:
        started = time.monotonic()
        summary = run_audit([tasks], Path(run_dir) / "run", settings, pool())
        elapsed = time.monotonic() - started
    load = os.getloadavg()[0]
    print(f"{label}: {elapsed:.1f} s, exit {summary.exit_code}, load {load:.1f}", file=sys.stderr)
    return label, elapsed, summary, load


def report(rows: list[Row], n: int, args: argparse.Namespace) -> str:
    base = n / rows[0][1] * 3600
    where = args.tasks.relative_to(ROOT) if args.tasks.is_relative_to(ROOT) else args.tasks
    command = f".venv/bin/python bench/audit.py --repeats {args.repeats}"
    if args.corpus:
        maps = " ".join(f"--image-map {a}={b}" for a, b in parse_image_map(args.image_map))
        command += f" --tasks DIR {maps} --corpus NAME"
        where = f"{args.corpus}"
    lines = [
        CORPUS_SECTION if args.corpus else SECTION,
        "",
        f"Command: `{command}` "
        f"({datetime.now(UTC):%Y-%m-%d}, {os.cpu_count()} cores, Linux {platform.release()}, "
        f"Python {platform.python_version()}), on {n} task(s) of {where}, "
        "images built beforehand; the load average at each run's end is in the table.",
        "",
        "| configuration | wall s | tasks per hour | ratio to 1 worker | exit | load at end |",
        "|---|---|---|---|---|---|",
    ]
    for label, elapsed, summary, load in rows:
        per_hour = n / elapsed * 3600
        lines.append(
            f"| {label} | {elapsed:.1f} | {per_hour:.0f} | {per_hour / base:.2f}× | "
            f"{summary.exit_code} | {load:.1f} |"
        )
    counts = rows[0][2].flag_counts()
    shown = ", ".join(f"`{k}` {v}" for k, v in counts.items()) or "none"
    verdicts = ", ".join(f"{k} {v}" for k, v in sorted(rows[0][2].verdict_counts().items()))
    lines += ["", f"Flags found per category (one-worker run): {shown}. Verdicts: {verdicts}.", ""]
    if args.corpus:
        lines += ["| task | verdict | flags | seconds (one worker) |", "|---|---|---|---|"]
        summary = rows[0][2]
        for record in summary.records:
            found = sorted({f.value for f in record.audit.flags}) if record.audit else []
            flags = ", ".join(f"`{f}`" for f in found) or "none"
            took = f"{record.seconds:.0f}" if record.seconds is not None else ""
            lines.append(f"| {record.job.name} | {summary.verdict_of(record)} | {flags} | {took} |")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
