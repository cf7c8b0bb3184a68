"""Runs across nodes: smoke rollouts per minute on one Ray node and on two nodes of the
same machine, as ratios to the one-node run.

    .venv/bin/python bench/cluster_run.py [--minutes 2] [--desktops 2] [--no-write]

Each configuration is a fresh local Ray cluster on 127.0.0.1
(`cleanroom.ray_cluster.local`) and one ``cleanroom run --ray`` driven in this process
(`cleanroom.cluster.driver.run_across_nodes`) with one window of ``--minutes`` of smoke
rollouts (writer and form, in turn), the clipboard check at 0.1x, no warm standby and no
leaky controls (the number is not what is timed). Configurations:

- one node with ``--desktops`` acting environments: the baseline;
- two nodes with half as many each: the same desktops split over two pools, so the
  ratio is the cost of a second node's own canary, control, verify server and pulls;
- two nodes with ``--desktops`` each: twice the desktops on the same cores, so the
  ratio is what a second node buys on one machine (on two machines each would have its
  own cores).

Measured per configuration: rollouts finished in the window per minute of window, the
window's wall time, the time from the driver's start to the first window (nodes
starting their pools and controls in parallel), and the records the driver copied.
Writes the ``## Runs across nodes: rollouts per minute`` section of bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from rich.console import Console

from cleanroom.cluster.driver import ClusterConfig, run_across_nodes
from cleanroom.cluster.node_run import NodeSettings
from cleanroom.ray_cluster.local import LocalCluster
from cleanroom.store.rundb import RunStore
from results_md import write_section

ROOT = Path(__file__).resolve().parents[1]
SECTION = "## Runs across nodes: rollouts per minute"


@dataclass(frozen=True)
class Measured:
    label: str
    nodes: int
    desktops: int
    rollouts: int
    window_s: float
    to_first_window_s: float
    records: int
    status: str
    load: float

    @property
    def per_minute(self) -> float:
        return self.rollouts / (self.window_s / 60) if self.window_s else 0.0


def measure(label: str, desktops: list[int], minutes: float) -> Measured:
    """One run on a fresh cluster of ``len(desktops)`` nodes."""
    resources: list[dict[str, float]] = [{"desktops": float(d)} for d in desktops]
    cluster = LocalCluster.start(
        [""] * len(desktops), python_path=str(ROOT / "src"), resources=resources
    )
    try:
        with tempfile.TemporaryDirectory(prefix="cleanroom-bench-cluster-") as tmp:
            run = Path(tmp) / "run"
            settings = NodeSettings(
                run_key="bench",
                node_runs=str(Path(tmp) / "nodes"),
                tasks=("writer", "form"),
                tests=("clipboard",),
                trials_scale=0.1,
                window_minutes=minutes,
                leaky_controls=False,
                warm_standby=False,
            )
            started = time.time()
            quiet = Console(file=open(os.devnull, "w"))  # noqa: SIM115
            result = run_across_nodes(
                ClusterConfig(address=cluster.address, run_dir=run, settings=settings), quiet
            )
            with RunStore.open(run, owner=False) as store:
                (window,) = store.windows()
                rollouts = [r for r in store.rollouts(window.index) if r.finished]
                records = len(store.isolation_rows()) + len(store.canary_samples())
                records += len(store.rollouts()) + len(store.console_samples())
            window_s = (window.ended_at or window.started_at) - window.started_at
            first = window.started_at - started
    finally:
        cluster.stop()
    load = os.getloadavg()[0]
    m = Measured(
        label,
        len(desktops),
        sum(desktops),
        len(rollouts),
        window_s,
        first,
        records,
        result.status,
        load,
    )
    print(f"{label}: {m.per_minute:.1f} rollouts/min, {m.status}, load {load:.1f}", file=sys.stderr)
    return m


def report(rows: list[Measured], args: argparse.Namespace) -> str:
    base = rows[0].per_minute or 1.0
    lines = [
        SECTION,
        "",
        f"Command: `.venv/bin/python bench/cluster_run.py --minutes {args.minutes:g} "
        f"--desktops {args.desktops}` ({datetime.now(UTC):%Y-%m-%d}, {os.cpu_count()} cores, "
        f"Linux {platform.release()}, Python {platform.python_version()}). Every node is a "
        "`ray start` on this one machine, so two nodes share its cores: on two machines each "
        "node would have its own.",
        "",
        "| configuration | nodes | desktops | rollouts in the window | window s | "
        "rollouts per minute | ratio to one node | driver start to window 1 s | "
        "records copied | run | load at end |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for m in rows:
        lines.append(
            f"| {m.label} | {m.nodes} | {m.desktops} | {m.rollouts} | {m.window_s:.0f} | "
            f"{m.per_minute:.1f} | {m.per_minute / base:.2f}× | {m.to_first_window_s:.0f} | "
            f"{m.records} | {m.status} | {m.load:.1f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=2.0)
    parser.add_argument("--desktops", type=int, default=2)
    parser.add_argument("--no-write", action="store_true", help="do not update RESULTS.md")
    args = parser.parse_args()
    d = args.desktops
    rows = [
        measure(f"one node, {d} desktops", [d], args.minutes),
        measure(f"two nodes, {d // 2 or 1} desktop(s) each", [d // 2 or 1] * 2, args.minutes),
        measure(f"two nodes, {d} desktops each", [d, d], args.minutes),
    ]
    text = report(rows, args)
    print(text)
    if not args.no_write:
        write_section(SECTION, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
