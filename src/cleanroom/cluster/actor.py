"""A node's share of a run as a Ray actor, pinned to its node.

The actor takes every unit of `DESKTOPS_RESOURCE` its node declares (the node's pool has
that many acting environments), so no other work that asks for desktops lands beside
it, and it is never restarted (``max_restarts=0``): a node that died is lost, never
silently replaced by a fresh pool that saw none of the window. Its methods run in
threads of their own (``max_concurrency``), so the driver pulls records while a window
runs.
"""

from __future__ import annotations

from typing import Any

from cleanroom.cluster.evidence import EvidenceBatch
from cleanroom.cluster.node_run import (
    NodeRun,
    NodeSettings,
    NodeStarted,
    NodeWindowEnd,
)
from cleanroom.ray_cluster.session import DESKTOPS_RESOURCE, RayNode
from cleanroom.store.node_records import Cursor, NodeBatch

# Calls that may run at once on one node: a window (or the controls), pulls, a stop.
CONCURRENT_CALLS = 4


class NodeActor:
    """The Ray actor's class: `NodeRun`'s methods, callable remotely."""

    def __init__(self, settings: NodeSettings, node: str) -> None:
        self.run = NodeRun(settings, node)

    def start(self) -> NodeStarted:
        return self.run.start()

    def run_window(self, index: int) -> NodeWindowEnd:
        return self.run.run_window(index)

    def end_of_run(self) -> NodeWindowEnd | None:
        return self.run.end_of_run()

    def own_controls(self) -> list[str]:
        return self.run.own_controls()

    def changes(self, cursor: Cursor) -> NodeBatch:
        return self.run.changes(cursor)

    def evidence(self, seen: dict[str, tuple[int, int]]) -> EvidenceBatch:
        return self.run.evidence(seen)

    def stop(self, status: str = "finished") -> None:
        self.run.stop(status)

    def close(self) -> None:
        self.run.close()


def start_actor(ray: Any, node: RayNode, settings: NodeSettings) -> Any:
    """A `NodeActor` on ``node``, with all of its desktops."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    return (
        ray.remote(NodeActor)
        .options(
            num_cpus=0,
            resources={DESKTOPS_RESOURCE: node.units(DESKTOPS_RESOURCE)},
            max_restarts=0,
            max_task_retries=0,
            max_concurrency=CONCURRENT_CALLS,
            scheduling_strategy=NodeAffinitySchedulingStrategy(node.node_id, soft=False),
        )
        .remote(settings, node.name)
    )
