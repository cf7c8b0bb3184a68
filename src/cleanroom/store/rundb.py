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
from cleanroom.core.outcomes import Cause, Outcome, Reason, Status
from cleanroom.core.publish import NOT_CLAIMED, ControlResult
from cleanroom.core.tokens import RolloutId, Token
from cleanroom.store.folders import private_folder
from cleanroom.store.migrations import MIGRATIONS
from cleanroom.store.node_records import (
    APPENDED,
    BATCH_LIMIT,
    ENVIRONMENT_COLUMNS,
    ROLLOUT_COLUMNS,
    WATCH_COLUMNS,
    WINDOW_COLUMNS,
    Cursor,
    NodeBatch,
)
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
    node: str = ""  # the node it ran on, in a run across nodes

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
class NodeRecord:
    """A node of a run across nodes, as the driver recorded it."""

    name: str
    node_id: str
    host: str
    envs: int
    run_dir: str
    joined_at: float
    ended_at: float | None
    status: str  # running, finished, lost or failed
    detail: str


@dataclass(frozen=True)
class VerifierResult:
    rollout_id: str | None
    verifier: str
    outcome: Outcome
    at: float


class NodeRecords:
    """The part of `RunStore` a run across nodes adds: a node sends what changed in its
    own run database (`changes_since`); the driver keeps it with the node's name
    (`copy_from_node`) and records the nodes, their share of each window and their loss."""

    _conn: sqlite3.Connection

    def _tx(self) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError

    # -- on a node ----------------------------------------------------------------------

    def changes_since(self, cursor: Cursor) -> NodeBatch:
        """This database's records past ``cursor``, at most `BATCH_LIMIT` of a table."""
        batch = NodeBatch()
        for table, columns in APPENDED.items():
            batch.appended[table] = [
                tuple(r)
                for r in self._conn.execute(
                    f"SELECT id, {', '.join(columns)} FROM {table} WHERE node = '' AND id > ?"
                    " ORDER BY id LIMIT ?",
                    (cursor.ids.get(table, 0), BATCH_LIMIT),
                )
            ]
        batch.rollouts = [
            tuple(r)
            for r in self._conn.execute(
                f"SELECT {', '.join(ROLLOUT_COLUMNS)} FROM rollouts WHERE node = ''"
                " AND change_seq > ? ORDER BY change_seq LIMIT ?",
                (cursor.change, BATCH_LIMIT),
            )
        ]
        batch.windows = _all(self._conn, "windows", WINDOW_COLUMNS, "")
        batch.environments = _all(
            self._conn, "environments", ENVIRONMENT_COLUMNS, "WHERE node = ''"
        )
        batch.watches = _all(self._conn, "watches", WATCH_COLUMNS, "WHERE node = ''")
        return batch

    # -- at the driver ------------------------------------------------------------------

    def copy_from_node(self, node: str, batch: NodeBatch) -> int:
        """Keep ``batch`` as ``node``'s records in one transaction; a record already kept
        is kept once, and a rollout keeps its latest change. Return how many records were
        new or changed."""
        changed = 0
        with self._tx() as c:
            for table, rows in batch.appended.items():
                columns = APPENDED[table]
                marks = ", ".join("?" * (len(columns) + 2))
                cur = c.executemany(
                    f"INSERT OR IGNORE INTO {table} (node, source_id, {', '.join(columns)})"
                    f" VALUES ({marks})",
                    [(node, *r) for r in rows],
                )
                changed += max(cur.rowcount, 0)
            updates = ", ".join(f"{k} = excluded.{k}" for k in ROLLOUT_COLUMNS[6:])
            cur = c.executemany(
                f"INSERT INTO rollouts (node, {', '.join(ROLLOUT_COLUMNS)}) VALUES"
                f" ({', '.join('?' * (len(ROLLOUT_COLUMNS) + 1))})"
                f" ON CONFLICT (node, rollout_id) DO UPDATE SET {updates}"
                " WHERE excluded.change_seq > rollouts.change_seq",
                [(node, *r) for r in batch.rollouts],
            )
            changed += max(cur.rowcount, 0)
            c.executemany(
                "INSERT INTO node_windows (node, idx, started_at, ended_at, status)"
                " VALUES (?, ?, ?, ?, ?) ON CONFLICT (node, idx) DO UPDATE SET"
                " started_at = excluded.started_at, ended_at = excluded.ended_at,"
                " status = excluded.status WHERE node_windows.status != 'lost'",
                [(node, *w) for w in batch.windows],
            )
            c.executemany(
                f"INSERT OR REPLACE INTO environments (node, {', '.join(ENVIRONMENT_COLUMNS)})"
                f" VALUES ({', '.join('?' * (len(ENVIRONMENT_COLUMNS) + 1))})",
                [(node, *e) for e in batch.environments],
            )
            c.executemany(
                f"INSERT OR REPLACE INTO watches (node, {', '.join(WATCH_COLUMNS)})"
                f" VALUES ({', '.join('?' * (len(WATCH_COLUMNS) + 1))})",
                [(node, *w) for w in batch.watches],
            )
        return changed

    def add_node(self, name: str, *, node_id: str, host: str, envs: int, run_dir: str) -> None:
        with self._tx() as c:
            c.execute(
                "INSERT INTO nodes (name, node_id, host, envs, run_dir, joined_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (name, node_id, host, envs, run_dir, time.time()),
            )

    def end_node(self, name: str, status: str, detail: str = "") -> None:
        """Record how a node ended (``finished``, ``lost`` or ``failed``); the first end
        stands."""
        with self._tx() as c:
            c.execute(
                "UPDATE nodes SET status = ?, detail = ?, ended_at = ?"
                " WHERE name = ? AND status = 'running'",
                (status, detail, time.time(), name),
            )

    def nodes(self) -> list[NodeRecord]:
        rows = self._conn.execute(
            "SELECT name, node_id, host, envs, run_dir, joined_at, ended_at, status, detail"
            " FROM nodes ORDER BY name"
        )
        return [NodeRecord(*r) for r in rows]

    def lose_node(
        self, name: str, window: int | None, checks: list[str], why: str, status: str = "lost"
    ) -> int:
        """Record ``name`` lost (its machine or its Ray process died, or it was cut off;
        ``failed``: its harness raised): its rollouts still open become invalid
        (``interrupted``); in ``window``, its share is ``lost`` and each of ``checks``
        gets a ``lost`` row from it, which fails the window. Return how many rollouts
        became invalid."""
        now = time.time()
        with self._tx() as c:
            cur = c.execute(
                "UPDATE rollouts SET ended_at = ?, outcome = 'invalid', reason = ?,"
                " score = NULL, detail = ? WHERE node = ? AND ended_at IS NULL",
                (now, Reason.INTERRUPTED.value, f"its node was lost: {why}", name),
            )
            interrupted = cur.rowcount
            if window is not None:
                c.execute(
                    "INSERT INTO node_windows (node, idx, started_at, ended_at, status)"
                    " VALUES (?, ?, ?, ?, 'lost') ON CONFLICT (node, idx) DO UPDATE SET"
                    " ended_at = excluded.ended_at, status = 'lost'",
                    (name, window, now, now),
                )
                c.executemany(
                    "INSERT INTO isolation_rows (window, test, trial, from_env, to_env, result,"
                    " detail, at, node) VALUES (?, ?, 0, ?, ?, 'lost', ?, ?, ?)",
                    [
                        (
                            window,
                            check,
                            name,
                            name,
                            f"node {name} lost mid-window: {why}",
                            now,
                            name,
                        )
                        for check in checks
                    ],
                )
            c.execute(
                "UPDATE nodes SET status = ?, detail = ?, ended_at = ?"
                " WHERE name = ? AND status = 'running'",
                (status, why, now, name),
            )
        return interrupted

    def node_window_statuses(self, window: int) -> dict[str, str]:
        rows = self._conn.execute(
            "SELECT node, status FROM node_windows WHERE idx = ? ORDER BY node", (window,)
        )
        return dict(rows.fetchall())


class RunStore(NodeRecords):
    """The run folder's database. Open with `create` or `open`; close when done."""

    def __init__(self, run_dir: Path, conn: sqlite3.Connection, lock_fd: int | None) -> None:
        self.run_dir = run_dir
        self.path = run_dir / DB_NAME
        self._conn = conn
        self._lock_fd = lock_fd
        self._write = threading.Lock()
        self.recovered: list[str] = []
        # A view of one node's records (`node_view`); None: every record of the run.
        self.node: str | None = None

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
        if self.node is not None:
            raise RunStoreError("a node's view of a run is read-only")
        return transaction(self._conn, self._write)

    def node_view(self, node: str) -> RunStore:
        """The records of one node of a run across nodes, read-only, sharing this store's
        connection (close this store, never the view)."""
        view = RunStore(self.run_dir, self._conn, None)
        view._write = self._write
        view.node = node
        return view

    def _scoped(self, sql: str, args: tuple[Any, ...] = (), **equal: Any) -> tuple[str, tuple]:
        """``sql`` with a WHERE clause for each of ``equal`` that is not None, and for the
        view's node."""
        if self.node is not None:
            equal = {**equal, "node": self.node}
        clauses = [(k, v) for k, v in equal.items() if v is not None]
        if not clauses:
            return sql, args
        where = " AND ".join(f"{k} = ?" for k, _ in clauses)
        return f"{sql} WHERE {where}", args + tuple(v for _, v in clauses)

    @staticmethod
    def _next_change(c: sqlite3.Connection) -> int:
        """The next change number: writes are serialised, so a later commit always has a
        larger one, and a reader that saw up to N misses nothing by asking for more than N."""
        row = c.execute("UPDATE change_counter SET seq = seq + 1 WHERE id = 1 RETURNING seq")
        return int(row.fetchone()[0])

    def _recover(self) -> list[str]:
        now = time.time()
        with self._tx() as c:
            lost = [
                r[0] for r in c.execute("SELECT rollout_id FROM rollouts WHERE ended_at IS NULL")
            ]
            c.execute(
                "UPDATE rollouts SET ended_at = ?, outcome = 'invalid', reason = ?, score = NULL,"
                " detail = 'the harness stopped before this rollout finished', change_seq = ?"
                " WHERE ended_at IS NULL",
                (now, Reason.INTERRUPTED.value, self._next_change(c)),
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

    def end(self, status: str) -> None:
        """Close the run as its owner's loop ended: ``finished``, ``interrupted`` or
        ``failed``. A run that did not finish is reopened as its owner, the crash-recovery
        path: every rollout and window left unfinished becomes interrupted, and the run
        with them (or failed, when it failed)."""
        if status == "finished":
            self.finish_run()
            self.close()
            return
        self.close()
        with RunStore.open(self.run_dir) as recovered:
            if status == "failed":
                recovered.finish_run("failed")

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
        sql, args = self._scoped(
            "SELECT name, unix_user, display, generation, created_at FROM environments"
        )
        rows = self._conn.execute(sql + " ORDER BY node, name", args)
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
        """The run's windows; a node's view: that node's share of them."""
        if self.node is not None:
            rows = self._conn.execute(
                "SELECT idx, started_at, ended_at FROM node_windows WHERE node = ? ORDER BY idx",
                (self.node,),
            )
        else:
            rows = self._conn.execute("SELECT idx, started_at, ended_at FROM windows ORDER BY idx")
        return [Window(*r) for r in rows]

    def window_status(self, index: int) -> str | None:
        if self.node is not None:
            row = self._conn.execute(
                "SELECT status FROM node_windows WHERE node = ? AND idx = ?", (self.node, index)
            ).fetchone()
        else:
            row = self._conn.execute(
                "SELECT status FROM windows WHERE idx = ?", (index,)
            ).fetchone()
        return row[0] if row else None

    # -- rollouts -----------------------------------------------------------------------

    def start_rollout(self, token: Token, task: str, started_at: float | None = None) -> None:
        """Record that a rollout began; until `finish_rollout` it counts as unfinished."""
        rid: RolloutId = token.rollout
        at = time.time() if started_at is None else started_at
        with self._tx() as c:
            c.execute(
                "INSERT INTO rollouts (rollout_id, env, window, token, task, started_at,"
                " change_seq) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (str(rid), rid.env, rid.window, str(token), task, at, self._next_change(c)),
            )

    def finish_rollout(
        self, rollout_id: str, outcome: Outcome, ended_at: float | None = None
    ) -> None:
        """Record a rollout's outcome; a rollout finishes once."""
        at = time.time() if ended_at is None else ended_at
        with self._tx() as c:
            cur = c.execute(
                "UPDATE rollouts SET ended_at = ?, outcome = ?, reason = ?, score = ?, detail = ?,"
                " change_seq = ? WHERE rollout_id = ? AND ended_at IS NULL",
                (
                    at,
                    outcome.status.value,
                    _reason(outcome),
                    outcome.score,
                    outcome.detail,
                    self._next_change(c),
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
                "UPDATE rollouts SET outcome = 'invalid', reason = ?, score = NULL, detail = ?,"
                " change_seq = ? WHERE window = ? AND ended_at IS NOT NULL AND ended_at >= ?"
                " AND outcome != 'invalid'",
                (reason.value, detail, self._next_change(c), window, after),
            )
            return cur.rowcount

    def mark_invalid(self, rollout_ids: Iterable[str], reason: Reason, detail: str) -> int:
        """Mark finished rollouts invalid (a cross row named them); return how many changed.

        A rollout already invalid keeps its first reason.
        """
        ids = list(rollout_ids)
        with self._tx() as c:
            seq = self._next_change(c)
            cur = c.executemany(
                "UPDATE rollouts SET outcome = 'invalid', reason = ?, score = NULL, detail = ?,"
                " change_seq = ? WHERE rollout_id = ? AND ended_at IS NOT NULL"
                " AND outcome != 'invalid'",
                [(reason.value, detail, seq, rid) for rid in ids],
            )
            return cur.rowcount

    def mark_agent_fault(self, rollout_ids: Iterable[str], reason: Reason, detail: str) -> int:
        """Score finished rollouts 0 for their agent's own act (``reason`` is the agent's);
        return how many changed.

        A rollout already scored 0 for an act of its agent keeps that first reason, and
        an invalid one stays invalid: the infrastructure's fault excludes it whatever
        the agent did.
        """
        if reason.cause is not Cause.AGENT:
            raise ValueError(f"{reason} is not the agent's act")
        ids = list(rollout_ids)
        with self._tx() as c:
            seq = self._next_change(c)
            # A valid outcome's only reasons are its agent's (`Outcome`): one without a
            # reason is the one not yet scored for an act.
            cur = c.executemany(
                "UPDATE rollouts SET outcome = 'failure', reason = ?, score = 0.0, detail = ?,"
                " change_seq = ? WHERE rollout_id = ? AND ended_at IS NOT NULL"
                " AND outcome != 'invalid' AND reason IS NULL",
                [(reason.value, detail, seq, rid) for rid in ids],
            )
            return cur.rowcount

    def rollouts(self, window: int | None = None) -> list[RolloutRecord]:
        sql, args = self._scoped(
            "SELECT rollout_id, env, window, token, task, started_at, ended_at, outcome, reason,"
            " score, detail, node FROM rollouts",
            window=window,
        )
        out = []
        for r in self._conn.execute(sql + " ORDER BY started_at, node, rollout_id", args):
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
                    r[11],
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
        sql, args = self._scoped(
            "SELECT test, trial, from_env, to_env, result, window, detail FROM isolation_rows",
            window=window,
        )
        return [
            IsolationRow(r[0], r[1], r[2], r[3], RowResult(r[4]), r[5], r[6])
            for r in self._conn.execute(sql + " ORDER BY id", args)
        ]

    def row_counts(self, window: int | None = None) -> dict[RowResult, int]:
        """How many isolation rows of each result (of one window, or of the run)."""
        sql, args = self._scoped("SELECT result, COUNT(*) FROM isolation_rows", window=window)
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
        sql, args = self._scoped(
            "SELECT at, ok, focused_text_sha256, window_list_sha256, clipboard_sha256, window,"
            " detail, sources FROM canary_samples",
            window=window,
        )
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
        sql, args = self._scoped(
            "SELECT at, ok, pane_sha256, history_size, window, detail, sources"
            " FROM console_samples",
            window=window,
        )
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
        sql, args = self._scoped("SELECT name, active, detail FROM watches")
        rows = self._conn.execute(sql + " ORDER BY node, name", args)
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
        sql, args = self._scoped(
            "SELECT rollout_id, verifier, outcome, reason, score, details, at"
            " FROM verifier_results",
            rollout_id=rollout_id,
        )
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
        sql, args = self._scoped(
            "SELECT test, env, at, ms, phase, window FROM latency_samples", test=test
        )
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
        sql, args = self._scoped(
            "SELECT test, leak, fired, rows, cross, detail FROM leaky_controls"
        )
        rows = self._conn.execute(sql + " ORDER BY id", args)
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
        sql, args = self._scoped(
            "SELECT typing_cross, typing_trials, clipboard_cross, clipboard_trials,"
            " clipboard_skew_ms FROM control_results"
        )
        rows = self._conn.execute(sql + " ORDER BY id", args)
        return [
            ControlResult(typing, typed, clip, clipped, tuple(json.loads(skews)))
            for typing, typed, clip, clipped, skews in rows
        ]


def _reason(outcome: Outcome) -> str | None:
    return outcome.reason.value if outcome.reason else None


def _all(
    conn: sqlite3.Connection, table: str, columns: tuple[str, ...], where: str
) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in conn.execute(f"SELECT {', '.join(columns)} FROM {table} {where}")]
