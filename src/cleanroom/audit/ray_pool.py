"""Audit jobs as Ray tasks: one task per job, each on a node that declares Docker.

Each job asks for one unit of `DOCKER_RESOURCE` (``ray start --resources '{"docker":
2}'``: two jobs at a time there) and builds and runs its containers with that node's own
daemon, through the scheduling every Ray user of cleanroom shares
(`cleanroom.ray_cluster.tasks`). The task paths must be readable at the same place on
every node. A job whose worker or node died is reported lost, which the audit records as
``interrupted`` and runs again on resume; it is never scored.
"""

from __future__ import annotations

from typing import Any

from cleanroom.audit.findings import TaskAudit, could_not_audit
from cleanroom.audit.job import AuditSettings, run_job
from cleanroom.audit.jobs import AuditJob
from cleanroom.audit.pool import JobEvents
from cleanroom.core.outcomes import Reason
from cleanroom.ray_cluster import tasks
from cleanroom.ray_cluster.session import (
    DOCKER_RESOURCE,
    RayUnavailable,
    joined,
    require_nodes,
    this_node_name,
)

__all__ = ["DOCKER_RESOURCE", "RayPool", "RayUnavailable"]


def _run_on_node(job: dict[str, str], settings: dict[str, Any]) -> dict[str, Any]:
    """The Ray task: one job on the node it landed on, its result as plain data."""
    import ray

    audit = run_job(AuditJob.from_json(job), AuditSettings.from_json(settings))
    return {"audit": audit.to_json(), "node": this_node_name(ray)}


class RayPool:
    """Jobs on the Ray cluster at ``address`` (``auto``: the one this machine is in)."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.where = f"Ray cluster at {address}"

    def run(self, jobs: list[AuditJob], settings: AuditSettings, events: JobEvents) -> None:
        with joined(self.address, "audit --ray") as ray:
            require_nodes(ray, self.address, DOCKER_RESOURCE)
            ends = tasks.run_each(
                ray,
                _run_on_node,
                jobs,
                lambda job: (job.to_json(), settings.to_json()),
                resource=DOCKER_RESOURCE,
                started=lambda job: events.started(job, "ray"),
            )
            for ended in ends:
                job, end = ended.item, ended.end
                if isinstance(end, tasks.Finished):
                    events.done(job, TaskAudit.from_json(end.value["audit"]), end.value["node"])
                elif isinstance(end, tasks.Failed):  # run_job raised after all: a bug of ours
                    failed = could_not_audit("audit", Reason.HARNESS_ERROR.value, end.why)
                    events.done(job, failed, "ray")
                else:
                    events.lost(job, f"the Ray worker running this job was lost: {end.why}")
