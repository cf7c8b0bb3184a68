"""Audit jobs as Ray tasks: one task per job, each on a node that declares Docker.

Each job asks for one unit of the custom resource `DOCKER_RESOURCE`, so it lands only on
a node started with it (``ray start --resources '{"docker": 2}'``: two jobs at a time
there) and builds and runs its containers with that node's own daemon. The task paths
must be readable at the same place on every node. Ray never retries a job
(``max_retries=0``): a job whose worker or node died is reported lost, which the audit
records as ``interrupted`` and runs again on resume; it is never scored.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import sys
from typing import Any

from cleanroom.audit.findings import TaskAudit, could_not_audit
from cleanroom.audit.job import AuditSettings, run_job
from cleanroom.audit.jobs import AuditJob
from cleanroom.audit.pool import Done, Lost, Started
from cleanroom.core.errors import ExtraNotInstalledError
from cleanroom.core.outcomes import Reason

DOCKER_RESOURCE = "docker"


class RayUnavailable(RuntimeError):
    """No Ray cluster could be joined at the address given."""


def _run_on_node(job: dict[str, str], settings: dict[str, Any]) -> dict[str, Any]:
    """The Ray task: one job on the node it landed on, its result as plain data."""
    import ray

    audit = run_job(AuditJob.from_json(job), AuditSettings.from_json(settings))
    node = f"{socket.gethostname()}/{ray.get_runtime_context().get_node_id()[:12]}"
    return {"audit": audit.to_json(), "node": node}


class RayPool:
    """Jobs on the Ray cluster at ``address`` (``auto``: the one this machine is in)."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.where = f"Ray cluster at {address}"

    def run(
        self,
        jobs: list[AuditJob],
        settings: AuditSettings,
        started: Started,
        done: Done,
        lost: Lost,
    ) -> None:
        # Ray's driver prints what its cluster reports (a node that died) on stdout, which
        # is the audit's own output (--json): it goes to stderr instead.
        with contextlib.redirect_stdout(sys.stderr):
            self._run(jobs, settings, started, done, lost)

    def _run(
        self,
        jobs: list[AuditJob],
        settings: AuditSettings,
        started: Started,
        done: Done,
        lost: Lost,
    ) -> None:
        try:
            import ray
            from ray.exceptions import RayError, RayTaskError
        except ImportError as exc:
            raise ExtraNotInstalledError("audit --ray", "ray", exc.name or "ray") from exc

        _reachable(self.address)
        try:
            ray.init(address=self.address, log_to_driver=False, logging_level=logging.ERROR)
        except Exception as exc:  # Ray raises ConnectionError, RuntimeError, ValueError
            raise RayUnavailable(f"no Ray cluster at {self.address}: {exc}") from exc
        try:
            if not ray.cluster_resources().get(DOCKER_RESOURCE):
                raise RayUnavailable(
                    f"the Ray cluster at {self.address} has no node declaring the "
                    f"{DOCKER_RESOURCE!r} resource (ray start --resources "
                    f"'{{\"{DOCKER_RESOURCE}\": N}}')"
                )
            remote = ray.remote(
                num_cpus=0, resources={DOCKER_RESOURCE: 1}, max_retries=0, retry_exceptions=False
            )(_run_on_node)
            pending: dict[Any, AuditJob] = {}
            for job in jobs:
                pending[remote.remote(job.to_json(), settings.to_json())] = job
                started(job, "ray")
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1)
                for ref in ready:
                    job = pending.pop(ref)
                    try:
                        payload = ray.get(ref)
                    except RayTaskError as exc:  # run_job raised after all: a bug of ours
                        done(job, _harness_error(exc), "ray")
                    except RayError as exc:  # the worker or its node is gone
                        lost(job, f"the Ray worker running this job was lost: {_first_line(exc)}")
                    else:
                        done(job, TaskAudit.from_json(payload["audit"]), payload["node"])
        finally:
            ray.shutdown()


def _reachable(address: str, timeout_s: float = 10.0) -> None:
    """Refuse at once a ``host:port`` where nothing listens: Ray itself keeps retrying
    such an address for many minutes before it gives up."""
    host, sep, port = address.rpartition(":")
    if address == "auto" or not sep or not port.isdigit():
        return
    try:
        socket.create_connection((host, int(port)), timeout=timeout_s).close()
    except OSError as exc:
        raise RayUnavailable(f"no Ray cluster at {address}: {exc}") from exc


def _harness_error(exc: Exception) -> TaskAudit:
    return could_not_audit("audit", Reason.HARNESS_ERROR.value, str(exc)[-3000:])


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:500]
