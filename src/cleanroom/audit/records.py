"""An audit's jobs as the audit reads them, over the database's plain rows
(`store.auditdb`): the job (`AuditJob`) and what was found (`TaskAudit`) as typed records."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from cleanroom.audit.findings import TaskAudit
from cleanroom.audit.jobs import AuditJob, JobKind
from cleanroom.store.auditdb import AuditStore, JobProgress, JobRow, StoredJob


@dataclass(frozen=True)
class JobRecord(JobProgress):
    """One job as stored: where it stands, the task, and (once done) what was found."""

    job: AuditJob
    audit: TaskAudit | None


def add_jobs(store: AuditStore, jobs: Iterable[AuditJob]) -> None:
    """Record the jobs not yet known to ``store``."""
    store.add_jobs(StoredJob(j.id, j.kind.value, j.path, j.name) for j in jobs)


def record_finished(store: AuditStore, job: AuditJob, audit: TaskAudit, node: str = "") -> None:
    """``job`` is done with ``audit`` as what was found."""
    store.finished(job.id, audit.verdict, [f.value for f in audit.flags], audit.to_json(), node)


def job_records(store: AuditStore, statuses: Iterable[str] | None = None) -> list[JobRecord]:
    """Every job of ``store`` (or those in ``statuses``), by task name."""
    return [_record(row) for row in store.jobs(statuses)]


def _record(row: JobRow) -> JobRecord:
    return JobRecord(
        status=row.status,
        attempts=row.attempts,
        node=row.node,
        started_at=row.started_at,
        ended_at=row.ended_at,
        detail=row.detail,
        job=AuditJob(JobKind(row.kind), row.path),
        audit=TaskAudit.from_json(row.result) if row.result is not None else None,
    )
