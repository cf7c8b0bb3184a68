"""The verify server's WAL checkpoints, moved off the committing connection into a thread."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from cleanroom.core.tokens import mint
from cleanroom.store.submissions import LeaseRecord, SubmissionStore
from cleanroom.verify_server.attribution import attribute

TOKEN = str(mint("env01-w001-r0001"))
LEASE = LeaseRecord("L1", "env01", "env01-w001-r0001", TOKEN, 1, 0.0, 1e12)


def _fill(store: SubmissionStore, batches: int) -> None:
    row = attribute(LEASE, (TOKEN + " " + "x" * 2000).encode(), 1.0)
    for _ in range(batches):
        store.add_submission_batch([row] * 8)


def _db_grows_within(path: Path, before: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.stat().st_size > before:
            return True
        time.sleep(0.05)
    return False


def test_checkpoints_run_beside_the_commits_and_the_rows_survive_a_reopen(tmp_path: Path) -> None:
    db = tmp_path / "verify.sqlite3"
    store = SubmissionStore.open(db)
    store.add_lease(LEASE)
    store.checkpoint_in_background(interval_s=0.05)
    before = db.stat().st_size
    _fill(store, 200)  # 1,600 rows of 2 kB: far past 1,000 WAL pages

    # The committing connection checkpoints nothing itself; the thread copies the WAL in.
    assert store._conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
    assert _db_grows_within(db, before, 5.0)
    store.close()

    with SubmissionStore.open(db) as again:
        assert len(again.submissions("L1")) == 1600


def test_without_the_thread_nothing_checkpoints_the_commits(tmp_path: Path) -> None:
    # The control for the test above: the committing connection alone, its automatic
    # checkpoints off, leaves the database file as it was.
    db = tmp_path / "verify.sqlite3"
    store = SubmissionStore.open(db)
    store.add_lease(LEASE)
    store._conn.execute("PRAGMA wal_autocheckpoint = 0")
    before = db.stat().st_size
    _fill(store, 200)
    assert not _db_grows_within(db, before, 0.5)
    store.close()


def test_a_checkpoint_a_reader_holds_back_is_tried_again_and_loses_no_commit(
    tmp_path: Path,
) -> None:
    db = tmp_path / "verify.sqlite3"
    store = SubmissionStore.open(db)
    store.add_lease(LEASE)
    store.checkpoint_in_background(interval_s=0.05)
    # A reader holding a snapshot keeps a passive checkpoint from finishing.
    reader = sqlite3.connect(str(db), isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM submissions").fetchone()
    _fill(store, 50)
    time.sleep(0.2)
    reader.execute("COMMIT")
    reader.close()
    _fill(store, 10)
    store.close()
    with SubmissionStore.open(db) as again:
        assert len(again.submissions("L1")) == 480
