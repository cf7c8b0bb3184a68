"""The sweep streams the verify server's submissions under a deadline: past it, what was
not read is reported with its count, and what was read is kept."""

from __future__ import annotations

from pathlib import Path

from cleanroom.core.token_forms import Bound
from cleanroom.isolation.checks.token_sweep import read_submissions
from cleanroom.store.submissions import NewSubmission, SubmissionStore

LEAKED = "env01-w001-r0003-0a0b0c0d"


def _db(tmp_path: Path, bodies: list[bytes]) -> Path:
    path = tmp_path / "verify.sqlite3"
    with SubmissionStore.open(path) as store:
        store.add_submissions(
            NewSubmission("lease", "env02", "env02-w001-r0004", 1, 10.0 + i, body, (), (), False)
            for i, body in enumerate(bodies)
        )
    return path


def test_every_submission_is_read_within_the_deadline(tmp_path: Path) -> None:
    db = _db(tmp_path, [b"token=nothing", f"token={LEAKED}".encode()])
    readings = read_submissions(db, 0.0, ("env01", "env02"))
    assert len(readings) == 2
    assert not any(r.unread for r in readings)
    assert [str(h.token) for h in readings[1].hits] == [LEAKED]


def test_past_the_deadline_the_rows_left_are_reported_unread_with_their_count(
    tmp_path: Path,
) -> None:
    db = _db(tmp_path, [b"token=x"] * 5)
    [left] = read_submissions(db, 0.0, ("env01", "env02"), deadline_s=0.0)
    assert left.error is None  # unread, not unreadable
    assert left.place.owners == ("env01", "env02")
    [spot] = left.unread
    assert spot.bound is Bound.DEADLINE
    assert spot.detail.startswith("5 submissions not read")
