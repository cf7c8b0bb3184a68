"""Running audit jobs: on this machine (`LocalPool`, the default) or on Ray (`ray_pool`).

A pool is given the jobs and the audit's `JobEvents`, and calls exactly one of ``done``
or ``lost`` for every job it started: ``done`` with what the job found (a job never
raises: `run_job` turns every failure into a check that could not be made), ``lost`` when
the worker running it went away, which the audit records as ``interrupted``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from cleanroom.audit.findings import TaskAudit
from cleanroom.audit.job import AuditSettings, run_job
from cleanroom.audit.jobs import AuditJob
from cleanroom.verifiers.container.side_by_side import side_by_side


@dataclass(frozen=True)
class JobEvents:
    """What a pool tells the audit about each job: where it started (the node, or
    ``local``), that it is done with what it found and where, or that it was lost and why."""

    started: Callable[[AuditJob, str], None]
    done: Callable[[AuditJob, TaskAudit, str], None]
    lost: Callable[[AuditJob, str], None]


class JobPool(Protocol):
    """Where audit jobs run."""

    where: str

    def run(self, jobs: list[AuditJob], settings: AuditSettings, events: JobEvents) -> None: ...


def default_workers() -> int:
    """One worker per core: a job mostly waits on Docker, whose builds and containers
    use the cores."""
    return max(1, len(os.sched_getaffinity(0)))


class LocalPool:
    """Jobs in threads of this process, ``workers`` at a time, on the local Docker daemon
    (through the same bounded pool as every other caller that verifies side by side)."""

    def __init__(self, workers: int | None = None) -> None:
        self.workers = workers or default_workers()
        self.where = f"local pool of {self.workers} worker(s)"

    def run(self, jobs: list[AuditJob], settings: AuditSettings, events: JobEvents) -> None:
        def one(job: AuditJob) -> None:
            events.started(job, "local")
            events.done(job, run_job(job, settings), "local")

        side_by_side(jobs, one, self.workers)
