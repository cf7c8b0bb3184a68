"""The run database: one SQLite file per run, owned by this module alone.

Every record a run produces (environments, windows, rollouts, isolation rows, canary
samples, verifier results, positive-control results) is written here and nowhere else.

Crash safety: the file is in WAL mode and every write is its own committed transaction
(or one transaction for a batch), so killing the harness, even with SIGKILL, loses no
committed row. A running harness holds an exclusive ``flock`` on ``run.lock``; the kernel
drops it when the process dies however it dies. Opening a run whose lock is free
therefore knows its previous owner is gone, and marks every rollout that never finished
as ``invalid`` (``interrupted``) instead of dropping it.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import threading
import time
from collections.abc import Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cleanroom.core.canary import CanarySample, ConsoleSample
from cleanroom.core.isolation import IsolationRow, RowResult, Window
from cleanroom.core.outcomes import Outcome, Reason, Status
from cleanroom.core.publish import NOT_CLAIMED, ControlResult
from cleanroom.core.tokens import RolloutId, Token
from cleanroom.store.folders import private_folder
from cleanroom.store.migrations import MIGRATIONS
from cleanroom.store.sqlite_file import (
    connect_wal,
    migrate,
    schema_version,
    take_owner_lock,
    transaction,
)

DB_NAME = "run.sqlite"
LOCK_NAME = "run.lock"


class RunStoreError(RuntimeError):
    """The run folder or its database cannot be used as asked."""


class RunBusy(RunStoreError):
    """Another live process owns this run."""


@dataclass(frozen=True)
class RolloutRecord:
    """A rollout as stored: its identity, token, task, times and (once ended) its outcome."""

    rollout_id: str
    env: str
    window: int
    token: str
    task: str
    started_at: float
    ended_at: float | None
    outcome: Status | None
    reason: Reason | None
    score: float | None
    detail: str

    @property
    def finished(self) -> bool:
        return self.ended_at is not None


@dataclass(frozen=True)
class EnvironmentRecord:
    name: str
    unix_user: str | None
    display: str | None
    generation: int
    created_at: float


@dataclass(frozen=True)
class LatencySample:
    """How long one screenshot (or other timed observation) took, in milliseconds."""

    test: str
    env: str
    at: float
    ms: float
    phase: str = ""  # e.g. "before" and "during" a disturbance
    window: int | None = None


@dataclass(frozen=True)
class LeakyControlResult:
    """One isolation test run against one deliberately leaky setup: did it fire?"""

    test: str
    leak: str
    fired: bool
    rows: int
    cross: int
    detail: str = ""


@dataclass(frozen=True)
class WatchRecord:
    """Whether a watch (the parked console) was active in the run, and why not."""

    name: str
    active: bool
    detail: str = ""


@dataclass(frozen=True)
class VerifierResult:
    rollout_id: str | None
    verifier: str
    outcome: Outcome
    at: float


class RunStore:
    """The run folder's database. Open with `create` or `open`; close when done."""

    def __init__(self, run_dir: Path, conn: sqlite3.Connection, lock_fd: int | None) -> None:
        self.run_dir = run_dir
        self.path = run_dir / DB_NAME
        self._conn = conn
        self._lock_fd = lock_fd
        self._write = threading.Lock()
        self.recovered: list[str] = []

    # -- opening and closing -------------------------------------------------------------

    @classmethod
    def create(
        cls, run_dir: str | os.PathLike[str], meta: dict[str, Any] | None = None
    ) -> RunStore:
        """Make a new run folder (or adopt an empty one) with a fresh database."""
        path = Path(run_dir)
        if (path / DB_NAME).exists():
            raise RunStoreError(f"{path} already holds a run; open it instead")
        private_folder(path)
        store = cls._connect(path, owner=True)
        with store._tx() as c:
            c.execute(
                "INSERT INTO runs (id, created_at, host, meta) VALUES (1, ?, ?, ?)",
                (time.time(), socket.gethostname(), json.dumps(meta or {}, sort_keys=True)),
            )
        return store

    @classmethod
    def open(cls, run_dir: str | os.PathLike[str], *, owner: bool = True) -> RunStore:
        """Open an existing run.

        As ``owner`` (the default) take the run's lock, failing with `RunBusy` if a live
        process holds it, and mark rollouts and windows left unfinished by a dead owner as
        interrupted. With ``owner=False`` open for reading beside a live harness.
        """
        path = Path(run_dir)
        if not (path / DB_NAME).exists():
            raise RunStoreError(f"{path} holds no run database ({DB_NAME})")
        store = cls._connect(path, owner=owner)
        if owner:
            store.recovered = store._recover()
        return store

    @classmethod
    def _connect(cls, path: Path, *, owner: bool) -> RunStore:
        lock_fd = None
        if owner:
            busy = RunBusy(f"{path} is in use by another live process")
            lock_fd = take_owner_lock(path / LOCK_NAME, busy)
        try:
            conn = connect_wal(path / DB_NAME)
            conn.execute("PRAGMA foreign_keys=ON")
            store = cls(path, conn, lock_fd)
            if owner:
                store._migrate()
            else:
                store._check_version()
        except sqlite3.DatabaseError as exc:
            if lock_fd is not None:
                os.close(lock_fd)
            raise RunStoreError(f"{path / DB_NAME} is not a usable run database: {exc}") from exc
        return store

    def close(self) -> None:
        """Close the database once no write is in progress: a thread still writing (a
        canary look that returned late) finishes first, and a later write fails with a
        Python error instead of reaching a closed connection."""
        with self._write:
            self._conn.close()
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # closing the descriptor releases the flock
            self._lock_fd = None

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def schema_version(self) -> int:
        return schema_version(self._conn)

    def _migrate(self) -> None:
        migrate(self._conn, self._write, MIGRATIONS, self.path, RunStoreError)

    def _check_version(self) -> None:
        if self.schema_version != len(MIGRATIONS):
            raise RunStoreError(
                f"{self.path} has schema version {self.schema_version}; open it as owner "
                "once to migrate it"
            )

    def _tx(self) -> AbstractContextManager[sqlite3.Connection]:
        return transaction(self._conn, self._write)

    def _recover(self) -> list[str]:
        now = time.time()
        with self._tx() as c:
            lost = [
                r[0] for r in c.execute("SELECT rollout_id FROM rollouts WHERE ended_at IS NULL")
            ]
            c.execute(
                "UPDATE rollouts SET ended_at = ?, outcome = 'invalid', reason = ?, score = NULL,"
                " detail = 'the harness stopped before this rollout finished'"
                " WHERE ended_at IS NULL",
                (now, Reason.INTERRUPTED.value),
            )
            c.execute(
                "UPDATE windows SET ended_at = ?, status = 'interrupted' WHERE ended_at IS NULL",
                (now,),
            )
            c.execute(
                "UPDATE runs SET status = 'interrupted', ended_at = ? WHERE status = 'running'",
                (now,),
            )
        return lost

    # -- the run ------------------------------------------------------------------------

    def run_info(self) -> dict[str, Any]:
        row = self._conn.execute(
            "SELECT created_at, ended_at, status, host, meta FROM runs WHERE id = 1"
        ).fetchone()
        if row is None:
            raise RunStoreError(f"{self.path} has no run record")
        return {
            "created_at": row[0],
            "ended_at": row[1],
            "status": row[2],
            "host": row[3],
            "meta": json.loads(row[4]),
        }

    def finish_run(self, status: str = "finished") -> None:
        with self._tx() as c:
            c.execute(
                "UPDATE runs SET status = ?, ended_at = ? WHERE id = 1", (status, time.time())
            )

    # -- environments -------------------------------------------------------------------

    def add_environment(
        self,
        name: str,
        *,
        unix_user: str | None = None,
        display: str | None = None,
        generation: int = 0,
        meta: dict[str, Any] | None = None,
    ) -> None:
        with self._tx() as c:
            c.execute(
                "INSERT INTO environments (name, unix_user, display, generation, created_at, meta)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (name, unix_user, display, generation, time.time(), json.dumps(meta or {})),
            )

    def set_generation(self, name: str, generation: int) -> None:
        with self._tx() as c:
            cur = c.execute(
                "UPDATE environments SET generation = ? WHERE name = ? AND generation < ?",
                (generation, name, generation),
            )
            if cur.rowcount != 1:
                raise RunStoreError(
                    f"{name}: no such environment, or generation {generation} "
                    "is not newer than the stored one"
                )

    def move_environment(self, name: str, *, unix_user: str, display: str | None) -> None:
        """Record the user and display an environment runs as since its last reset (a
        warm standby's slots each have their own)."""
        with self._tx() as c:
            c.execute(
                "UPDATE environments SET unix_user = ?, display = ? WHERE name = ?",
                (unix_user, display, name),
            )

    def environments(self) -> list[EnvironmentRecord]:
        rows = self._conn.execute(
            "SELECT name, unix_user, display, generation, created_at FROM environments"
            " ORDER BY name"
        )
        return [EnvironmentRecord(*r) for r in rows]

    # -- windows ------------------------------------------------------------------------

    def open_window(self, index: int, started_at: float | None = None) -> Window:
        at = time.time() if started_at is None else started_at
        with self._tx() as c:
            c.execute("INSERT INTO windows (idx, started_at) VALUES (?, ?)", (index, at))
        return Window(index, at)

    def close_window(
        self, index: int, ended_at: float | None = None, status: str = "closed"
    ) -> None:
        at = time.time() if ended_at is None else ended_at
        with self._tx() as c:
            cur = c.execute(
                "UPDATE windows SET ended_at = ?, status = ? WHERE idx = ? AND ended_at IS NULL",
                (at, status, index),
            )
            if cur.rowcount != 1:
                raise RunStoreError(f"window {index} is not open")

    def fail_window(self, index: int) -> None:
        """Mark a closed window ``failed``: a check that ran after its close (the end of
        the run's token sweep) found what fails it."""
        with self._tx() as c:
            cur = c.execute(
                "UPDATE windows SET status = 'failed' WHERE idx = ? AND ended_at IS NOT NULL",
                (index,),
            )
            if cur.rowcount != 1:
                raise RunStoreError(f"window {index} is not closed")

    def windows(self) -> list[Window]:
        rows = self._conn.execute("SELECT idx, started_at, ended_at FROM windows ORDER BY idx")
        return [Window(*r) for r in rows]

    def window_status(self, index: int) -> str | None:
        row = self._conn.execute("SELECT status FROM windows WHERE idx = ?", (index,)).fetchone()
        return row[0] if row else None

    # -- rollouts -----------------------------------------------------------------------

    def start_rollout(self, token: Token, task: str, started_at: float | None = None) -> None:
        """Record that a rollout began; until `finish_rollout` it counts as unfinished."""
        rid: RolloutId = token.rollout
        at = time.time() if started_at is None else started_at
        with self._tx() as c:
            c.execute(
                "INSERT INTO rollouts (rollout_id, env, window, token, task, started_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (str(rid), rid.env, rid.window, str(token), task, at),
            )

    def finish_rollout(
        self, rollout_id: str, outcome: Outcome, ended_at: float | None = None
    ) -> None:
        """Record a rollout's outcome; a rollout finishes once."""
        at = time.time() if ended_at is None else ended_at
        with self._tx() as c:
            cur = c.execute(
                "UPDATE rollouts SET ended_at = ?, outcome = ?, reason = ?, score = ?, detail = ?"
                " WHERE rollout_id = ? AND ended_at IS NULL",
                (
                    at,
                    outcome.status.value,
                    _reason(outcome),
                    outcome.score,
                    outcome.detail,
                    rollout_id,
                ),
            )
            if cur.rowcount != 1:
                raise RunStoreError(f"rollout {rollout_id} is unknown or already finished")

    def invalidate_rollouts(self, window: int, after: float, reason: Reason, detail: str) -> int:
        """Mark every rollout of a window that ended after ``after`` invalid; return how many.

        A rollout already invalid keeps its first reason. This is how a sticky
        contamination flag reaches outcomes: a rollout that ended after the event cannot be
        trusted, whatever its verifier said.
        """
        with self._tx() as c:
            cur = c.execute(
                "UPDATE rollouts SET outcome = 'invalid', reason = ?, score = NULL, detail = ?"
                " WHERE window = ? AND ended_at IS NOT NULL AND ended_at >= ?"
                " AND outcome != 'invalid'",
                (reason.value, detail, window, after),
            )
            return cur.rowcount

    def mark_invalid(self, rollout_ids: Iterable[str], reason: Reason, detail: str) -> int:
        """Mark finished rollouts invalid (a cross row named them); return how many changed.

        A rollout already invalid keeps its first reason.
        """
        ids = list(rollout_ids)
        with self._tx() as c:
            cur = c.executemany(
                "UPDATE rollouts SET outcome = 'invalid', reason = ?, score = NULL, detail = ?"
                " WHERE rollout_id = ? AND ended_at IS NOT NULL AND outcome != 'invalid'",
                [(reason.value, detail, rid) for rid in ids],
            )
            return cur.rowcount

    def rollouts(self, window: int | None = None) -> list[RolloutRecord]:
        sql = (
            "SELECT rollout_id, env, window, token, task, started_at, ended_at, outcome, reason,"
            " score, detail FROM rollouts"
        )
        args: tuple[Any, ...] = ()
        if window is not None:
            sql += " WHERE window = ?"
            args = (window,)
        out = []
        for r in self._conn.execute(sql + " ORDER BY started_at, rollout_id", args):
            out.append(
                RolloutRecord(
                    r[0],
                    r[1],
                    r[2],
                    r[3],
                    r[4],
                    r[5],
                    r[6],
                    Status(r[7]) if r[7] else None,
                    Reason(r[8]) if r[8] else None,
                    r[9],
                    r[10],
                )
            )
        return out

    # -- isolation rows -----------------------------------------------------------------

    def add_isolation_rows(self, rows: Iterable[IsolationRow], at: float | None = None) -> int:
        """Write a batch of rows in one transaction; return how many."""
        stamp = time.time() if at is None else at
        values = [
            (r.window, r.test, r.trial, r.from_env, r.to_env, r.result.value, r.detail, stamp)
            for r in rows
        ]
        with self._tx() as c:
            c.executemany(
                "INSERT INTO isolation_rows (window, test, trial, from_env, to_env, result, detail,"
                " at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                values,
            )
        return len(values)

    def isolation_rows(self, window: int | None = None) -> list[IsolationRow]:
        sql = "SELECT test, trial, from_env, to_env, result, window, detail FROM isolation_rows"
        args: tuple[Any, ...] = ()
        if window is not None:
            sql += " WHERE window = ?"
            args = (window,)
        return [
            IsolationRow(r[0], r[1], r[2], r[3], RowResult(r[4]), r[5], r[6])
            for r in self._conn.execute(sql + " ORDER BY id", args)
        ]

    def row_counts(self, window: int | None = None) -> dict[RowResult, int]:
        """How many isolation rows of each result (of one window, or of the run)."""
        sql = "SELECT result, COUNT(*) FROM isolation_rows"
        args: tuple[Any, ...] = ()
        if window is not None:
            sql += " WHERE window = ?"
            args = (window,)
        counts = dict.fromkeys(RowResult, 0)
        for result, n in self._conn.execute(sql + " GROUP BY result", args):
            counts[RowResult(result)] = n
        return counts

    # -- canary -------------------------------------------------------------------------

    def add_canary_sample(self, sample: CanarySample) -> None:
        with self._tx() as c:
            c.execute(
                "INSERT INTO canary_samples (window, at, ok, focused_text_sha256,"
                " window_list_sha256, clipboard_sha256, detail, sources)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    sample.window,
                    sample.at,
                    int(sample.ok),
                    sample.focused_text_sha256,
                    sample.window_list_sha256,
                    sample.clipboard_sha256,
                    sample.detail,
                    ",".join(sample.sources),
                ),
            )

    def canary_samples(self, window: int | None = None) -> list[CanarySample]:
        sql = (
            "SELECT at, ok, focused_text_sha256, window_list_sha256, clipboard_sha256, window,"
            " detail, sources FROM canary_samples"
        )
        args: tuple[Any, ...] = ()
        if window is not None:
            sql += " WHERE window = ?"
            args = (window,)
        return [
            CanarySample(
                r[0], bool(r[1]), r[2], r[3], r[4], r[5], r[6], tuple(filter(None, r[7].split(",")))
            )
            for r in self._conn.execute(sql + " ORDER BY at, id", args)
        ]

    def add_console_sample(self, sample: ConsoleSample) -> None:
        with self._tx() as c:
            c.execute(
                "INSERT INTO console_samples (window, at, ok, pane_sha256, history_size, detail,"
                " sources) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    sample.window,
                    sample.at,
                    int(sample.ok),
                    sample.pane_sha256,
                    sample.history_size,
                    sample.detail,
                    ",".join(sample.sources),
                ),
            )

    def console_samples(self, window: int | None = None) -> list[ConsoleSample]:
        sql = (
            "SELECT at, ok, pane_sha256, history_size, window, detail, sources FROM console_samples"
        )
        args: tuple[Any, ...] = ()
        if window is not None:
            sql += " WHERE window = ?"
            args = (window,)
        return [
            ConsoleSample(
                r[0], bool(r[1]), r[2], r[3], r[4], r[5], tuple(filter(None, r[6].split(",")))
            )
            for r in self._conn.execute(sql + " ORDER BY at, id", args)
        ]

    def set_watch(self, record: WatchRecord) -> None:
        """Record whether a watch is active (the latest record of a name stands)."""
        with self._tx() as c:
            c.execute(
                "INSERT OR REPLACE INTO watches (name, active, detail, at) VALUES (?, ?, ?, ?)",
                (record.name, int(record.active), record.detail, time.time()),
            )

    def watches(self) -> dict[str, WatchRecord]:
        rows = self._conn.execute("SELECT name, active, detail FROM watches ORDER BY name")
        return {r[0]: WatchRecord(r[0], bool(r[1]), r[2]) for r in rows}

    # -- verifier and control results ---------------------------------------------------

    def add_verifier_result(self, rollout_id: str | None, verifier: str, outcome: Outcome) -> None:
        with self._tx() as c:
            c.execute(
                "INSERT INTO verifier_results (rollout_id, verifier, outcome, reason, score,"
                " details, at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    rollout_id,
                    verifier,
                    outcome.status.value,
                    _reason(outcome),
                    outcome.score,
                    json.dumps({"detail": outcome.detail, **outcome.details}, default=str),
                    time.time(),
                ),
            )

    def verifier_results(self, rollout_id: str | None = None) -> list[VerifierResult]:
        sql = (
            "SELECT rollout_id, verifier, outcome, reason, score, details, at FROM verifier_results"
        )
        args: tuple[Any, ...] = ()
        if rollout_id is not None:
            sql += " WHERE rollout_id = ?"
            args = (rollout_id,)
        out = []
        for r in self._conn.execute(sql + " ORDER BY id", args):
            details = json.loads(r[5])
            detail = details.pop("detail", "")
            outcome = Outcome(Status(r[2]), r[4], Reason(r[3]) if r[3] else None, detail, details)
            out.append(VerifierResult(r[0], r[1], outcome, r[6]))
        return out

    def add_latency_samples(self, samples: Iterable[LatencySample]) -> int:
        """Write a batch of timed observations in one transaction; return how many."""
        values = [(s.window, s.test, s.env, s.phase, s.at, s.ms) for s in samples]
        with self._tx() as c:
            c.executemany(
                "INSERT INTO latency_samples (window, test, env, phase, at, ms)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                values,
            )
        return len(values)

    def latency_samples(self, test: str | None = None) -> list[LatencySample]:
        sql = "SELECT test, env, at, ms, phase, window FROM latency_samples"
        args: tuple[Any, ...] = ()
        if test is not None:
            sql += " WHERE test = ?"
            args = (test,)
        return [LatencySample(*r) for r in self._conn.execute(sql + " ORDER BY id", args)]

    def add_leaky_control(self, result: LeakyControlResult) -> None:
        with self._tx() as c:
            c.execute(
                "INSERT INTO leaky_controls (test, leak, fired, rows, cross, detail, at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    result.test,
                    result.leak,
                    int(result.fired),
                    result.rows,
                    result.cross,
                    result.detail,
                    time.time(),
                ),
            )

    def leaky_controls(self) -> list[LeakyControlResult]:
        rows = self._conn.execute(
            "SELECT test, leak, fired, rows, cross, detail FROM leaky_controls ORDER BY id"
        )
        return [LeakyControlResult(r[0], r[1], bool(r[2]), r[3], r[4], r[5]) for r in rows]

    def add_control_result(self, result: ControlResult, detail: str = "") -> None:
        with self._tx() as c:
            c.execute(
                "INSERT INTO control_results (at, typing_cross, typing_trials, clipboard_cross,"
                " clipboard_trials, fired, not_claimed, detail, clipboard_skew_ms)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    time.time(),
                    result.typing_cross,
                    result.typing_trials,
                    result.clipboard_cross,
                    result.clipboard_trials,
                    int(result.fired),
                    NOT_CLAIMED,
                    detail,
                    json.dumps(list(result.clipboard_skew_ms)),
                ),
            )

    def control_results(self) -> list[ControlResult]:
        rows = self._conn.execute(
            "SELECT typing_cross, typing_trials, clipboard_cross, clipboard_trials,"
            " clipboard_skew_ms FROM control_results ORDER BY id"
        )
        return [
            ControlResult(typing, typed, clip, clipped, tuple(json.loads(skews)))
            for typing, typed, clip, clipped, skews in rows
        ]


def _reason(outcome: Outcome) -> str | None:
    return outcome.reason.value if outcome.reason else None
