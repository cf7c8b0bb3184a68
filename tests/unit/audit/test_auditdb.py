"""The audit database: done jobs stay done, running jobs of a dead audit are interrupted,
and a resumed audit must use the settings it was started with."""

from __future__ import annotations

from pathlib import Path

import pytest

from cleanroom.audit.findings import TaskAudit
from cleanroom.audit.jobs import AuditJob, JobKind
from cleanroom.audit.records import add_jobs, job_records, record_finished
from cleanroom.store.auditdb import AuditBusy, AuditStore, AuditStoreError

SETTINGS = {"repeats": 3}
A = AuditJob(JobKind.CONTAINER, "/tasks/a")
B = AuditJob(JobKind.CONTAINER, "/tasks/b")


def test_a_job_left_running_is_interrupted_when_the_audit_is_opened_again(tmp_path: Path) -> None:
    store = AuditStore.open_or_create(tmp_path, SETTINGS)
    add_jobs(store, [A, B])
    store.started(A.id)
    store.started(B.id)
    record_finished(store, B, TaskAudit())
    store.close()  # as if the audit died: A never finished
    with AuditStore.open_or_create(tmp_path, SETTINGS) as again:
        status = {r.job.id: r.status for r in job_records(again)}
        assert again.recovered == [A.id]
    assert status == {A.id: "interrupted", B.id: "done"}


def test_adding_known_jobs_keeps_their_results(tmp_path: Path) -> None:
    with AuditStore.open_or_create(tmp_path, SETTINGS) as store:
        add_jobs(store, [A])
        store.started(A.id, "node-1")
        record_finished(store, A, TaskAudit())
        add_jobs(store, [A])
        (record,) = job_records(store)
    assert record.status == "done" and record.node == "node-1" and record.audit == TaskAudit()


def test_resuming_with_other_settings_is_refused(tmp_path: Path) -> None:
    AuditStore.open_or_create(tmp_path, SETTINGS).close()
    with pytest.raises(AuditStoreError, match="other settings"):
        AuditStore.open_or_create(tmp_path, {"repeats": 5})


def test_a_live_audit_owns_its_folder(tmp_path: Path) -> None:
    with AuditStore.open_or_create(tmp_path, SETTINGS), pytest.raises(AuditBusy):
        AuditStore.open_or_create(tmp_path, SETTINGS)


def test_an_audit_with_an_interrupted_job_exits_2_even_when_others_are_flagged(
    tmp_path: Path,
) -> None:
    from cleanroom.audit.findings import Finding, Flag
    from cleanroom.audit.summary import AuditSummary

    with AuditStore.open_or_create(tmp_path, SETTINGS) as store:
        add_jobs(store, [A, B])
        store.started(A.id)
        record_finished(store, A, TaskAudit((Finding(Flag.ORACLE_FAILS, "x"),)))
        store.started(B.id)
        store.interrupted(B.id, "the node was lost")
        records = tuple(job_records(store))
    summary = AuditSummary(records, str(tmp_path), "here", SETTINGS)
    assert summary.exit_code == 2
    done_only = AuditSummary(records[:1], str(tmp_path), "here", SETTINGS)
    assert done_only.exit_code == 1
