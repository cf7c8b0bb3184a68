"""One audit from start to end: find the jobs, record them, run what is not done.

The results database is the audit's memory: a job already ``done`` in the run folder is
skipped, a job ``interrupted`` (or left ``running`` by an audit that died) runs again,
after the containers it left on this machine's daemon are removed.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from cleanroom.audit.findings import TaskAudit
from cleanroom.audit.job import AuditSettings, remove_job_containers
from cleanroom.audit.jobs import AuditJob, find_jobs
from cleanroom.audit.pool import JobEvents, JobPool
from cleanroom.audit.records import add_jobs, job_records, record_finished
from cleanroom.audit.summary import AuditSummary
from cleanroom.store.auditdb import AuditStore

# Called as each job starts and ends: (job, "started" | "done" | "interrupted", audit).
Progress = Callable[[AuditJob, str, TaskAudit | None], None]


def run_audit(
    paths: list[Path],
    run_dir: Path,
    settings: AuditSettings,
    pool: JobPool,
    progress: Progress | None = None,
    *,
    on_plan: Callable[[int, int], None] | None = None,
) -> AuditSummary:
    """Audit every task under ``paths`` into ``run_dir`` and return the results.

    ``on_plan`` hears how many jobs there are and how many of them are already done.
    Raises `AuditInputError` for a path with no task and `AuditStoreError` for a run
    folder that cannot be used (busy, other settings).
    """
    jobs = find_jobs(paths)
    notify = progress or (lambda job, event, audit: None)
    with AuditStore.open_or_create(run_dir, settings.to_json()) as store:
        add_jobs(store, jobs)
        stored = {r.job.id: r for r in job_records(store)}
        todo = [j for j in jobs if stored[j.id].status != "done"]
        if on_plan is not None:
            on_plan(len(jobs), len(jobs) - len(todo))
        for job in todo:
            if stored[job.id].status == "interrupted":
                remove_job_containers(job.id)

        def started(job: AuditJob, node: str) -> None:
            store.started(job.id, node)
            notify(job, "started", None)

        def done(job: AuditJob, audit: TaskAudit, node: str) -> None:
            record_finished(store, job, audit, node)
            notify(job, "done", audit)

        def lost(job: AuditJob, detail: str) -> None:
            store.interrupted(job.id, detail)
            remove_job_containers(job.id)
            notify(job, "interrupted", None)

        try:
            pool.run(todo, settings, JobEvents(started, done, lost))
        finally:
            wanted = {j.id for j in jobs}
            records = tuple(r for r in job_records(store) if r.job.id in wanted)
            complete = all(r.status == "done" for r in records)
            store.finish_audit("finished" if complete else "incomplete")
        return AuditSummary(records, str(run_dir), pool.where, settings.to_json())
