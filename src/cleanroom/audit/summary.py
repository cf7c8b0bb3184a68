"""An audit's results as one record: every task's row, the counts, the exit code (pure).

Exit codes: 0 when every task was audited and none is flagged; 1 when every job ran and
some task is flagged (a ``naive`` flag, what only the naive verifier lets through, does
not count); 2 when a job was interrupted (the audit did not finish: resume it), when
nothing is flagged but some check could not be made, or when the audit could not run.
A task *not run* (it needs what this machine lacks, and says what) counts as neither.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from cleanroom.audit.findings import NOT_RUN, Flag
from cleanroom.audit.records import JobRecord

EXIT_CLEAN = 0
EXIT_FLAGGED = 1
EXIT_INCOMPLETE = 2


@dataclass(frozen=True)
class AuditSummary:
    """The rows of an audit (one per job) and where it ran."""

    records: tuple[JobRecord, ...]
    run_dir: str
    where: str
    settings: dict[str, Any]

    def verdict_of(self, record: JobRecord) -> str:
        if record.status != "done" or record.audit is None:
            return record.status
        return record.audit.verdict

    def flag_counts(self) -> dict[str, int]:
        counts: Counter[str] = Counter()
        for r in self.records:
            if r.audit is not None:
                counts.update(f.value for f in set(r.audit.flags))
        return {f.value: counts[f.value] for f in Flag if counts[f.value]}

    def verdict_counts(self) -> dict[str, int]:
        return dict(Counter(self.verdict_of(r) for r in self.records))

    @property
    def cleanroom_bugs(self) -> list[JobRecord]:
        return [
            r
            for r in self.records
            if r.audit is not None and Flag.FORGEABLE_SEALED in r.audit.flags
        ]

    @property
    def exit_code(self) -> int:
        verdicts = [self.verdict_of(r) for r in self.records]
        if any(r.status != "done" for r in self.records):
            return EXIT_INCOMPLETE
        if "flagged" in verdicts:
            return EXIT_FLAGGED
        if any(v not in ("clean", NOT_RUN) for v in verdicts):
            return EXIT_INCOMPLETE
        return EXIT_CLEAN

    def row(self, r: JobRecord) -> dict[str, Any]:
        audit = r.audit.to_json() if r.audit is not None else None
        return {
            "name": r.job.name,
            "kind": r.job.kind.value,
            "path": r.job.path,
            "job_id": r.job.id,
            "status": r.status,
            "verdict": self.verdict_of(r),
            "flags": audit["flags"] if audit else [],
            "attempts": r.attempts,
            "node": r.node,
            "seconds": None if r.seconds is None else round(r.seconds, 2),
            "detail": r.detail,
            "findings": audit["findings"] if audit else [],
            "unaudited": audit["unaudited"] if audit else [],
            "notes": audit.get("notes", []) if audit else [],
            "runs": audit["runs"] if audit else [],
            "stages": audit.get("stages", []) if audit else [],
            "not_run": audit.get("not_run", "") if audit else "",
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "run_dir": self.run_dir,
            "where": self.where,
            "settings": self.settings,
            "exit_code": self.exit_code,
            "counts": {"flags": self.flag_counts(), "verdicts": self.verdict_counts()},
            "cleanroom_bugs": [r.job.name for r in self.cleanroom_bugs],
            "tasks": [self.row(r) for r in self.records],
        }
