"""The verify server's database: leases, form submissions and frame counts.

Every SQL statement the verify server runs is in this module; callers pass typed records
in and get typed records out. One `SubmissionStore` is one SQLite connection (and, once
`checkpoint_in_background` is called, a second that only checkpoints the WAL), and a
server process opens exactly one.

Submitted text is kept as raw bytes (a BLOB), so whatever arrived comes back exactly,
NUL bytes and unusual Unicode included; it is only ever bound as a parameter, never
spliced into SQL. The tokens found inside it, the environments they name and whether any
of those differs from the attributed environment (``is_cross``) are computed once, at
insert time, and a partial index over the cross rows makes the audit an index lookup.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cleanroom.core.tokens import env_of

_log = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS leases (
    lease_id    TEXT PRIMARY KEY,
    env         TEXT NOT NULL,
    rollout_id  TEXT NOT NULL,
    token       TEXT NOT NULL,
    window_no   INTEGER NOT NULL,
    created_at  REAL NOT NULL,
    expires_at  REAL NOT NULL,
    frames      INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS submissions (
    id            INTEGER PRIMARY KEY,
    lease_id      TEXT NOT NULL,
    env           TEXT NOT NULL,
    rollout_id    TEXT NOT NULL,
    window_no     INTEGER NOT NULL,
    submitted_at  REAL NOT NULL,
    body          BLOB NOT NULL,
    found_tokens  TEXT NOT NULL,
    found_envs    TEXT NOT NULL,
    is_cross      INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS submissions_by_lease ON submissions (lease_id);
CREATE TABLE IF NOT EXISTS lease_overruns (
    lease_id    TEXT PRIMARY KEY,
    env         TEXT NOT NULL,
    rollout_id  TEXT NOT NULL,
    window_no   INTEGER NOT NULL,
    kind        TEXT NOT NULL,
    first_at    REAL NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS submissions_cross_by_window
    ON submissions (window_no) WHERE is_cross = 1;
"""

_INSERT_LEASE = """
INSERT INTO leases (lease_id, env, rollout_id, token, window_no, created_at, expires_at)
VALUES (?, ?, ?, ?, ?, ?, ?)
"""
_SELECT_LEASE = """
SELECT lease_id, env, rollout_id, token, window_no, created_at, expires_at
FROM leases WHERE lease_id = ?
"""
_INSERT_SUBMISSION = """
INSERT INTO submissions (lease_id, env, rollout_id, window_no, submitted_at, body,
                         found_tokens, found_envs, is_cross)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
"""
# Inside the batch's write transaction nothing else can insert, so the batch's ids are
# the next ones and are given explicitly: one executemany, and each id known up front.
_NEXT_SUBMISSION_ID = "SELECT coalesce(max(id), 0) + 1 FROM submissions"
_INSERT_SUBMISSION_WITH_ID = """
INSERT INTO submissions (id, lease_id, env, rollout_id, window_no, submitted_at, body,
                         found_tokens, found_envs, is_cross)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""
_SELECT_SUBMISSIONS = """
SELECT id, lease_id, env, rollout_id, window_no, submitted_at, body,
       found_tokens, found_envs, is_cross
FROM submissions WHERE lease_id = ? ORDER BY id
"""
# ``is_cross = 1`` must appear literally so SQLite can use the partial index.
_SELECT_CROSS = """
SELECT id, lease_id, env, rollout_id, window_no, submitted_at, found_tokens
FROM submissions WHERE window_no = ? AND is_cross = 1 ORDER BY id
"""
_SELECT_SINCE = """
SELECT id, lease_id, env, rollout_id, window_no, submitted_at, body,
       found_tokens, found_envs, is_cross
FROM submissions WHERE submitted_at >= ? ORDER BY id
"""
_SPENT = "SELECT count(*), coalesce(sum(length(body)), 0) FROM submissions WHERE lease_id = ?"
# Only the first overrun of a lease is written: a flood of refused submissions writes
# nothing more to the disk.
_INSERT_OVERRUN = """
INSERT OR IGNORE INTO lease_overruns (lease_id, env, rollout_id, window_no, kind, first_at)
VALUES (?, ?, ?, ?, ?, ?)
"""
_SELECT_OVERRUNS = """
SELECT lease_id, env, rollout_id, window_no, kind, first_at
FROM lease_overruns WHERE window_no = ? ORDER BY first_at
"""
_ADD_FRAMES = "UPDATE leases SET frames = frames + ? WHERE lease_id = ? RETURNING frames"
_SELECT_FRAMES = "SELECT frames FROM leases WHERE lease_id = ?"
_TOTALS = """
SELECT (SELECT count(*) FROM leases), (SELECT count(*) FROM submissions),
       (SELECT coalesce(sum(frames), 0) FROM leases)
"""


class StoreError(RuntimeError):
    """The verify server's database could not be opened or written."""


@dataclass(frozen=True, slots=True)
class LeaseRecord:
    """One lease: the environment and rollout every submission through it is attributed to."""

    lease_id: str
    env: str
    rollout_id: str
    token: str
    window: int
    created_at: float
    expires_at: float


@dataclass(slots=True)  # not frozen: a frozen dataclass costs the form a microsecond a row
class NewSubmission:
    """A submission about to be stored, with its token attribution already computed."""

    lease_id: str
    env: str
    rollout_id: str
    window: int
    submitted_at: float
    body: bytes
    found_tokens: tuple[str, ...]
    found_envs: tuple[str, ...]
    cross: bool


@dataclass(slots=True)  # not frozen: a frozen dataclass cannot extend NewSubmission
class SubmissionRecord(NewSubmission):
    """A stored submission, exactly as it was received, with the id it was stored under."""

    id: int


@dataclass(frozen=True, slots=True)
class AuditRecord:
    """One token that reached a form through another environment's lease."""

    submission_id: int
    token: str
    token_env: str
    attributed_env: str
    lease_id: str
    rollout_id: str
    window: int
    submitted_at: float


@dataclass(frozen=True, slots=True)
class OverrunRecord:
    """A lease that tried to submit past its budget: the first time, and which budget."""

    lease_id: str
    env: str
    rollout_id: str
    window: int
    kind: str
    first_at: float


@dataclass(frozen=True, slots=True)
class StoreTotals:
    """Row counts, so a caller can prove that a rejected request stored nothing."""

    leases: int
    submissions: int
    frames: int


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split()) if text else ()


def _submission_row(new: NewSubmission) -> tuple[object, ...]:
    return (
        new.lease_id,
        new.env,
        new.rollout_id,
        new.window,
        new.submitted_at,
        new.body,
        " ".join(new.found_tokens),
        " ".join(new.found_envs),
        1 if new.cross else 0,
    )


def _record(row: tuple[Any, ...]) -> SubmissionRecord:
    return SubmissionRecord(
        id=row[0],
        lease_id=row[1],
        env=row[2],
        rollout_id=row[3],
        window=row[4],
        submitted_at=row[5],
        body=bytes(row[6]),
        found_tokens=_words(row[7]),
        found_envs=_words(row[8]),
        cross=bool(row[9]),
    )


CHECKPOINT_INTERVAL_S = 0.5


class _Checkpointer:
    """Passive WAL checkpoints of one database, every so often, on a connection and
    thread of their own; a checkpoint that fails (the disk) is tried again next time,
    the WAL holding every commit meanwhile."""

    def __init__(self, path: str | Path, interval_s: float) -> None:
        self._conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
        self._conn.execute("PRAGMA busy_timeout = 5000")
        self._interval_s = interval_s
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="wal-checkpoints", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stopping.wait(self._interval_s):
            try:
                self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            except sqlite3.Error as exc:
                _log.warning("a WAL checkpoint failed (tried again): %s", exc)

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join()
        self._conn.close()


class SubmissionStore:
    """One SQLite connection to the verify server's database (WAL, synchronous=NORMAL)."""

    def __init__(self, conn: sqlite3.Connection, path: str | Path | None = None) -> None:
        self._conn = conn
        self._path = path
        self._checkpoints: _Checkpointer | None = None

    @classmethod
    def open(cls, path: str | Path) -> SubmissionStore:
        """Open (creating if needed) the database at ``path`` and make sure its schema exists."""
        try:
            # Autocommit: every statement is its own short transaction, so the hot path is
            # one INSERT and no explicit BEGIN/COMMIT round trips.
            conn = sqlite3.connect(
                str(path), isolation_level=None, check_same_thread=False, cached_statements=64
            )
            conn.execute("PRAGMA journal_mode = WAL")
            # In WAL mode NORMAL only syncs at checkpoints: a power cut can lose the last
            # few commits but never corrupts the database, and commits stay cheap.
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA busy_timeout = 5000")
            conn.execute("PRAGMA temp_store = MEMORY")
            conn.executescript(_SCHEMA)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the verify database {path}: {exc}") from exc
        return cls(conn, path)

    def checkpoint_in_background(self, interval_s: float = CHECKPOINT_INTERVAL_S) -> None:
        """Move the WAL's checkpoints off this connection into a thread of their own.

        SQLite checkpoints on the commit that fills the WAL past 1,000 pages, copying it
        into the database and syncing it to disk there: on a server whose commits are
        its hot path, that commit waits for the disk. From here on this connection never
        checkpoints; a thread with its own connection runs a passive checkpoint every
        ``interval_s`` (one that never blocks a writer or reader), and `close` runs the
        last. Durability is unchanged: a commit is in the WAL either way, and a
        checkpoint syncs the database whichever connection runs it.
        """
        if self._checkpoints is not None or self._path is None:
            return
        try:
            self._conn.execute("PRAGMA wal_autocheckpoint = 0")
            self._checkpoints = _Checkpointer(self._path, interval_s)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot start checkpoints of {self._path}: {exc}") from exc

    @classmethod
    def open_read_only(cls, path: str | Path) -> SubmissionStore:
        """Open an existing database for reading only, beside the server that writes it
        (the harness's token sweep reads what was submitted)."""
        uri = f"{Path(path).resolve().as_uri()}?mode=ro"
        try:
            conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
            conn.execute("PRAGMA busy_timeout = 5000")
            conn.execute("SELECT count(*) FROM submissions").fetchone()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot read the verify database {path}: {exc}") from exc
        return cls(conn)

    def close(self) -> None:
        """Close the connection (checkpointing the WAL)."""
        if self._checkpoints is not None:
            self._checkpoints.stop()
            self._checkpoints = None
        self._conn.close()

    def __enter__(self) -> SubmissionStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def add_lease(self, lease: LeaseRecord) -> None:
        """Store a new lease; its id must be new."""
        self._conn.execute(
            _INSERT_LEASE,
            (
                lease.lease_id,
                lease.env,
                lease.rollout_id,
                lease.token,
                lease.window,
                lease.created_at,
                lease.expires_at,
            ),
        )

    def close_lease(self, lease_id: str, now: float) -> LeaseRecord | None:
        """End a lease at ``now`` (never later than it would have ended); None if unknown."""
        self._conn.execute(
            "UPDATE leases SET expires_at = MIN(expires_at, ?) WHERE lease_id = ?",
            (now, lease_id),
        )
        return self.lease(lease_id)

    def lease(self, lease_id: str) -> LeaseRecord | None:
        """The lease with this id, or None if there is none."""
        row = self._conn.execute(_SELECT_LEASE, (lease_id,)).fetchone()
        return LeaseRecord(*row) if row else None

    def add_submission(self, new: NewSubmission) -> int:
        """Store one submission and return its id."""
        cur = self._conn.execute(_INSERT_SUBMISSION, _submission_row(new))
        return int(cur.lastrowid or 0)

    def add_submission_batch(self, rows: Sequence[NewSubmission]) -> list[int]:
        """Store submissions in one transaction, all of them or none; their ids, in order.

        This is the group commit's write: one commit for the rows of many concurrent
        requests. Any failure rolls the whole batch back and raises `StoreError`, so a
        caller answers every request of the batch with an error and never with a row
        that is not there.
        """
        conn = self._conn
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                first = int(conn.execute(_NEXT_SUBMISSION_ID).fetchone()[0])
                ids = list(range(first, first + len(rows)))
                conn.executemany(
                    _INSERT_SUBMISSION_WITH_ID,
                    [(sid, *_submission_row(new)) for sid, new in zip(ids, rows, strict=True)],
                )
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            raise StoreError(f"cannot store {len(rows)} submissions: {exc}") from exc
        return ids

    def add_submissions(self, rows: Iterable[NewSubmission]) -> int:
        """Store many submissions in one transaction (bulk loads); return how many."""
        count = 0

        def counted() -> Iterable[tuple[object, ...]]:
            nonlocal count
            for new in rows:
                count += 1
                yield _submission_row(new)

        with self._conn:
            self._conn.execute("BEGIN")
            self._conn.executemany(_INSERT_SUBMISSION, counted())
        return count

    def submissions(self, lease_id: str) -> list[SubmissionRecord]:
        """Every submission made through one lease, oldest first."""
        return [_record(row) for row in self._conn.execute(_SELECT_SUBMISSIONS, (lease_id,))]

    def submitted_since(self, since: float) -> list[SubmissionRecord]:
        """Every submission received at or after ``since``, through any lease, oldest first."""
        return [_record(row) for row in self._conn.execute(_SELECT_SINCE, (since,))]

    def iter_submitted_since(self, since: float) -> Iterator[SubmissionRecord]:
        """Every submission received at or after ``since``, oldest first, one row at a time
        (a reader that stops early never held the rest)."""
        for row in self._conn.execute(_SELECT_SINCE, (since,)):
            yield _record(row)

    def count_submitted_since(self, since: float, after_id: int = 0) -> int:
        """How many submissions received at or after ``since`` have an id past ``after_id``."""
        row = self._conn.execute(
            "SELECT count(*) FROM submissions WHERE submitted_at >= ? AND id > ?",
            (since, after_id),
        ).fetchone()
        return int(row[0])

    def audit(self, window: int) -> list[AuditRecord]:
        """Every token of window ``window`` that names another environment than its lease's.

        The cross rows are found through the partial index; a submission holding several
        foreign tokens gives one record per foreign token.
        """
        records: list[AuditRecord] = []
        for sid, lease_id, env, rollout_id, window_no, at, found in self._conn.execute(
            _SELECT_CROSS, (window,)
        ):
            for token in _words(found):
                token_env = env_of(token)
                if token_env is not None and token_env != env:
                    records.append(
                        AuditRecord(sid, token, token_env, env, lease_id, rollout_id, window_no, at)
                    )
        return records

    def spent(self, lease_id: str) -> tuple[int, int]:
        """How many submissions a lease has stored, and their bodies' bytes together."""
        count, nbytes = self._conn.execute(_SPENT, (lease_id,)).fetchone()
        return int(count), int(nbytes)

    def add_overrun(self, lease: LeaseRecord, kind: str, at: float) -> None:
        """Record that ``lease`` passed its budget (only its first overrun is kept)."""
        self._conn.execute(
            _INSERT_OVERRUN, (lease.lease_id, lease.env, lease.rollout_id, lease.window, kind, at)
        )

    def overruns(self, window: int) -> list[OverrunRecord]:
        """The leases of window ``window`` that passed their budget."""
        return [OverrunRecord(*row) for row in self._conn.execute(_SELECT_OVERRUNS, (window,))]

    def add_frames(self, lease_id: str, frames: int) -> int | None:
        """Add ``frames`` to a lease's frame count; the new total, or None if no such lease."""
        row = self._conn.execute(_ADD_FRAMES, (frames, lease_id)).fetchone()
        return int(row[0]) if row else None

    def frames(self, lease_id: str) -> int | None:
        """A lease's frame count, or None if no such lease."""
        row = self._conn.execute(_SELECT_FRAMES, (lease_id,)).fetchone()
        return int(row[0]) if row else None

    def totals(self) -> StoreTotals:
        """How many leases and submissions are stored and how many frames were counted."""
        leases, submissions, frames = self._conn.execute(_TOTALS).fetchone()
        return StoreTotals(int(leases), int(submissions), int(frames))
