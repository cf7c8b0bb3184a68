"""The submissions store keeps bytes exactly and finds cross rows by window."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cleanroom.store.submissions import LeaseRecord, StoreTotals, SubmissionStore
from cleanroom.verify_server.attribution import attribute


def lease(lease_id: str, env: str, window: int) -> LeaseRecord:
    rollout = f"{env}-w{window:03d}-r0001"
    return LeaseRecord(lease_id, env, rollout, f"{rollout}-0123abcd", window, 0.0, 10.0)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SubmissionStore]:
    with SubmissionStore.open(tmp_path / "s.sqlite3") as s:
        yield s


def test_a_lease_reads_back_as_written(store: SubmissionStore) -> None:
    rec = lease("a", "env01", 1)
    store.add_lease(rec)
    assert store.lease("a") == rec
    assert store.lease("b") is None


def test_submitted_bytes_come_back_exactly(store: SubmissionStore) -> None:
    rec = lease("a", "env01", 1)
    store.add_lease(rec)
    bodies = [b"", b"\x00", b"'; DROP TABLE submissions; --", "🧪\u200b\u202e".encode()]
    for body in bodies:
        store.add_submission(attribute(rec, body, 1.0))
    assert [s.body for s in store.submissions("a")] == bodies
    assert store.totals() == StoreTotals(leases=1, submissions=4, frames=0)


def test_the_audit_returns_only_foreign_tokens_of_the_window(store: SubmissionStore) -> None:
    mine, other_window = lease("a", "env01", 5), lease("b", "env01", 6)
    foreign = "env02-w005-r0009-deadbeef"
    store.add_submission(attribute(mine, mine.token.encode(), 1.0))
    sid = store.add_submission(attribute(mine, f"{mine.token} {foreign}".encode(), 2.0))
    store.add_submission(attribute(other_window, foreign.encode(), 3.0))

    [row] = store.audit(5)
    assert (row.submission_id, row.token, row.token_env, row.attributed_env) == (
        sid,
        foreign,
        "env02",
        "env01",
    )
    assert (row.lease_id, row.rollout_id, row.window, row.submitted_at) == (
        "a",
        mine.rollout_id,
        5,
        2.0,
    )
    assert store.audit(7) == []


def test_bulk_inserts_count_what_they_stored(store: SubmissionStore) -> None:
    rec = lease("a", "env01", 1)
    n = store.add_submissions(attribute(rec, b"x%d" % i, float(i)) for i in range(100))
    assert n == 100
    assert len(store.submissions("a")) == 100


def test_frames_add_up_per_lease(store: SubmissionStore) -> None:
    store.add_lease(lease("a", "env01", 1))
    assert store.add_frames("a", 3) == 3
    assert store.add_frames("a", 4) == 7
    assert store.frames("a") == 7
    assert store.add_frames("nope", 1) is None
    assert store.frames("nope") is None


def test_reopening_keeps_everything(tmp_path: Path) -> None:
    rec = lease("a", "env01", 1)
    with SubmissionStore.open(tmp_path / "s.sqlite3") as s:
        s.add_lease(rec)
        s.add_submission(attribute(rec, b"kept", 1.0))
    with SubmissionStore.open(tmp_path / "s.sqlite3") as s:
        assert [x.body for x in s.submissions("a")] == [b"kept"]
