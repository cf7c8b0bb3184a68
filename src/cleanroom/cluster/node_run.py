"""One node's share of a run across nodes: everything `cleanroom run` starts on one
machine, started on this node, with windows opened when the driver says.

On the node, exactly as on one machine: a run database of its own (on the node's disk),
the verify server, the pool (the canary env00, the acting environments, warm standby),
the watchdog, the parked console, the positive control before the first window, the
canary watcher throughout, and the run's own controls after the last. The driver pulls
what changed in the node's database (`changes`) through a read-only connection of its
own, while a window runs, so a slow node's records arrive late but arrive.
"""

from __future__ import annotations

import threading
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field
from rich.console import Console

from cleanroom.cluster.evidence import EvidenceBatch, evidence_since, node_folder_name
from cleanroom.core.isolation import judge_window
from cleanroom.harness.loop import (
    LoopServices,
    battery_and_plan,
    end_of_run_sweep,
    run_machine_info,
    run_positive_control,
    start_services,
    window_services,
)
from cleanroom.harness.own_controls import leaky_controls
from cleanroom.harness.plan import PlannedCheck
from cleanroom.harness.progress import LoopProgress
from cleanroom.harness.settings import LoopConfig, LoopSettings
from cleanroom.harness.window import WindowPlan, WindowResult, WindowServices, run_window
from cleanroom.rollouts.osworld_outside import OUTSIDE_TASK
from cleanroom.store.node_records import Cursor, NodeBatch
from cleanroom.store.rundb import RunStore

DEFAULT_NODE_RUNS = Path("/var/lib/cleanroom/node-runs")
LOG_NAME = "node.log"


class NodeSettings(LoopSettings):
    """What the driver tells every node: the loop's settings (each node's acting
    environments come from its desktops, its windows from the driver) and where the node
    keeps its share of the run."""

    run_key: str = Field(description="The run's folder name on every node.")
    node_runs: str = Field(
        default=str(DEFAULT_NODE_RUNS), description="Where each node keeps its share of the run."
    )

    @classmethod
    def of_loop(cls, config: LoopConfig, *, run_key: str, node_runs: str) -> NodeSettings:
        """What every node runs of ``config``; `loop_config` is the way back."""
        if OUTSIDE_TASK in config.tasks:
            raise ValueError(
                f"'{OUTSIDE_TASK}' runs on one machine only: across nodes, each node would"
                " serve its own OSWorld interface on its own loopback"
            )
        return cls(**config.fields_of(LoopSettings), run_key=run_key, node_runs=node_runs)

    def loop_config(self, run_dir: Path) -> LoopConfig:
        """The one-machine loop settings of a node's share, in ``run_dir``; the driver
        opens the windows."""
        return LoopConfig(**self.fields_of(LoopSettings), run_dir=run_dir, windows=1, job="node")

    def plan(self) -> list[PlannedCheck]:
        """The tests each window runs, as every node and the driver plan them."""
        return battery_and_plan(self.loop_config(Path(self.node_runs)))[1]


@dataclass(frozen=True)
class NodeStarted:
    """A node's services are up and its positive control ran."""

    run_dir: str
    environments: list[str]
    control_fired: bool | None  # None: it could not run


@dataclass(frozen=True)
class NodeWindowEnd:
    """How the node's share of a window ended."""

    index: int
    status: str  # closed or failed
    failure: str | None
    rollouts: int


def node_folder(settings: NodeSettings, node: str) -> Path:
    """Where ``node`` keeps its share of the run."""
    return Path(settings.node_runs) / settings.run_key / node_folder_name(node)


class NodeRun:
    """The node's services, started by `start` and stopped by `stop`."""

    def __init__(self, settings: NodeSettings, node: str) -> None:
        self.settings = settings
        self.node = node
        self.run_dir = node_folder(settings, node)
        self.stopping = threading.Event()
        self._stack = ExitStack()
        self._services: LoopServices | None = None
        self._windows: WindowServices | None = None
        self._last: WindowResult | None = None
        self._reader: RunStore | None = None
        self._log: Any = None

    def start(self) -> NodeStarted:
        """Create the node's run database, start its services, run its positive control."""
        config = self.settings.loop_config(self.run_dir)
        battery, plan = battery_and_plan(config)
        meta = {
            "job": "node",
            "node": self.node,
            "machine": run_machine_info(),
            "config": {
                "trials_scale": config.trials_scale,
                "leaky_controls": config.leaky_controls,
            },
            "tests": {p.name: p.trials for p in plan},
        }
        store = RunStore.create(self.run_dir, meta=meta)
        self._stack.callback(store.close)
        # Not on the stack: it outlives `stop`, so that what the services wrote while they
        # stopped (a last canary sample, the run's end) is pulled too; `close` ends it.
        self._reader = RunStore.open(self.run_dir, owner=False)
        self._log = (self.run_dir / LOG_NAME).open("a", encoding="utf-8")
        self._stack.callback(self._log.close)
        console = Console(file=self._log, force_terminal=False, width=120)
        progress = LoopProgress(console)
        services = start_services(config, store, self._stack, progress, console, self.stopping)
        services.plan = plan
        self._services = services
        run_positive_control(services)
        self._windows = window_services(services, battery, self._stack)
        controls = store.control_results()
        return NodeStarted(
            str(self.run_dir),
            list(services.pool.names),
            controls[-1].fired if controls else None,
        )

    def run_window(self, index: int) -> NodeWindowEnd:
        """Run the node's share of window ``index`` to its verdict."""
        if self._windows is None or self._services is None:
            raise RuntimeError("the node's services are not started")
        s = self.settings
        plan = WindowPlan(index, s.tasks, self._services.plan, s.window_minutes)
        result = run_window(self._windows, plan)
        self._last = result
        return NodeWindowEnd(index, result.status, result.verdict.failure, len(result.rollouts))

    def end_of_run(self) -> NodeWindowEnd | None:
        """The end-of-run token sweep in the node's last window."""
        if self._windows is None or self._last is None:
            return None
        last = end_of_run_sweep(self._windows, self._last)
        self._last = last
        verdict = judge_window(last.index, self._windows.store.isolation_rows(last.index))
        return NodeWindowEnd(last.index, last.status, verdict.failure, len(last.rollouts))

    def own_controls(self) -> list[str]:
        """The run's own controls on this node (its planted and leaky controls)."""
        if self._services is None:
            raise RuntimeError("the node's services are not started")
        return leaky_controls(self._services, [p.name for p in self._services.plan])

    def changes(self, cursor: Cursor) -> NodeBatch:
        """What changed in the node's run database past ``cursor`` (read-only)."""
        if self._reader is None:
            return NodeBatch()
        return self._reader.changes_since(cursor)

    def evidence(self, seen: dict[str, tuple[int, int]]) -> EvidenceBatch:
        """The node's evidence files new or changed since ``seen``."""
        return evidence_since(self.run_dir, seen)

    def stop(self, status: str = "finished") -> None:
        """Stop every service; the node's database records how its run ended. Its
        changes can still be pulled (`changes`) until `close`."""
        self.stopping.set()
        try:
            if self._services is not None:
                self._services.store.finish_run(status)
        finally:
            self._stack.close()

    def close(self) -> None:
        """End the read-only connection the driver pulls through (after `stop`)."""
        if self._reader is not None:
            self._reader.close()
            self._reader = None
