"""The audit's HTML page: every value escaped, counts per flag, a CLEANROOM BUG banner."""

from __future__ import annotations

from pathlib import Path

from cleanroom.audit.findings import Finding, Flag, TaskAudit
from cleanroom.audit.html import render
from cleanroom.audit.jobs import AuditJob, JobKind
from cleanroom.audit.records import JobRecord
from cleanroom.audit.summary import AuditSummary


def summary_of(*audits: tuple[str, TaskAudit]) -> AuditSummary:
    records = tuple(
        JobRecord(
            status="done",
            attempts=1,
            node="local",
            started_at=0.0,
            ended_at=1.0,
            detail="",
            job=AuditJob(JobKind.CONTAINER, f"/t/{name}"),
            audit=a,
        )
        for name, a in audits
    )
    return AuditSummary(records, "/runs/a", "local pool of 1 worker(s)", {})


def test_evidence_is_escaped_not_run() -> None:
    audit = TaskAudit((Finding(Flag.ORACLE_FAILS, "<script>alert(1)</script>"),))
    page = render(summary_of(("t", audit)))
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_counts_per_flag_and_a_banner_for_a_cleanroom_bug(tmp_path: Path) -> None:
    bug = TaskAudit((Finding(Flag.FORGEABLE_SEALED, "fooled"),))
    page = render(summary_of(("a", bug), ("b", TaskAudit())))
    assert "id='cleanroom-bugs'" in page and "CLEANROOM BUG" in page
    row = page.split("data-flag='forgeable_sealed'")[1].split("</tr>")[0]
    assert "<td class='count'>1</td>" in row
