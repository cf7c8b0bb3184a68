"""An audit's database: one SQLite file in the audit's run folder, owned by this module.

Every job (one task) is a row that goes ``pending`` → ``running`` → ``done``. A job whose
worker was lost (the process killed, a Ray node gone) is ``interrupted``, never scored;
opening the audit again as its owner turns every job left ``running`` by a dead owner
into ``interrupted``, and a resumed audit runs the pending and interrupted jobs again and
skips the done ones. The same file locking and write discipline as the run database
(`rundb`): WAL mode, each write its own transaction, an exclusive ``flock`` held by the
live audit.
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

from cleanroom.store.folders import private_folder
from cleanroom.store.migrations import AUDIT_MIGRATIONS
from cleanroom.store.sqlite_file import connect_wal, migrate, take_owner_lock, transaction

DB_NAME = "audit.sqlite"
LOCK_NAME = "audit.lock"


class AuditStoreError(RuntimeError):
    """The audit folder or its database cannot be used as asked."""


class AuditBusy(AuditStoreError):
    """Another live process owns this audit."""


@dataclass(frozen=True)
class StoredJob:
    """A job as written: its id, its kind (a name the audit gives it), its path and name."""

    job_id: str
    kind: str
    path: str
    name: str


@dataclass(frozen=True)
class JobProgress:
    """Where a job stands: its status, how many times it started, the node it ran on,
    when it started and ended, and the detail of its end (why it was lost)."""

    status: str
    attempts: int
    node: str
    started_at: float | None
    ended_at: float | None
    detail: str

    @property
    def seconds(self) -> float | None:
        """How long its last run took; None before it ended."""
        if self.started_at is None or self.ended_at is None:
            return None
        return self.ended_at - self.started_at


@dataclass(frozen=True)
class JobRow(JobProgress):
    """One job as stored: where it stands, what it is, and (once done) the audit's own
    JSON record of what was found, which this module keeps without reading it."""

    job_id: str
    kind: str
    path: str
    result: dict[str, Any] | None


class AuditStore:
    """The audit folder's database. Open with `open_or_create`; close when done."""

    def __init__(self, run_dir: Path, conn: sqlite3.Connection, lock_fd: int) -> None:
        self.run_dir = run_dir
        self.path = run_dir / DB_NAME
        self._conn = conn
        self._lock_fd: int | None = lock_fd
        self._write = threading.Lock()
        self.recovered: list[str] = []

    @classmethod
    def open_or_create(
        cls, run_dir: str | os.PathLike[str], settings: dict[str, Any]
    ) -> AuditStore:
        """Open the audit in ``run_dir`` (made if needed) as its owner.

        A new audit records ``settings``; an existing one must have been started with the
        same ones (a resumed audit that changed them would mix two audits' results).
        Jobs a dead owner left running are marked interrupted (`recovered`).
        """
        path = private_folder(run_dir)
        lock_fd = take_owner_lock(
            path / LOCK_NAME, AuditBusy(f"{path} is in use by another live audit")
        )
        try:
            store = cls(path, connect_wal(path / DB_NAME), lock_fd)
            store._migrate()
            store._adopt(settings)
            store.recovered = store._recover()
        except sqlite3.DatabaseError as exc:
            os.close(lock_fd)
            raise AuditStoreError(
                f"{path / DB_NAME} is not a usable audit database: {exc}"
            ) from exc
        except AuditStoreError:
            os.close(lock_fd)
            raise
        return store

    def close(self) -> None:
        with self._write:
            self._conn.close()
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def __enter__(self) -> AuditStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _migrate(self) -> None:
        migrate(self._conn, self._write, AUDIT_MIGRATIONS, self.path, AuditStoreError)

    def _adopt(self, settings: dict[str, Any]) -> None:
        row = self._conn.execute("SELECT settings FROM audit WHERE id = 1").fetchone()
        wanted = json.dumps(settings, sort_keys=True)
        if row is None:
            with self._tx() as c:
                c.execute(
                    "INSERT INTO audit (id, created_at, host, settings) VALUES (1, ?, ?, ?)",
                    (time.time(), socket.gethostname(), wanted),
                )
            return
        if row[0] != wanted:
            raise AuditStoreError(
                f"{self.path} holds an audit made with other settings ({row[0]}); resume it "
                f"with those, or audit into a new run folder"
            )
        with self._tx() as c:
            c.execute("UPDATE audit SET status = 'running', ended_at = NULL WHERE id = 1")

    def _recover(self) -> list[str]:
        with self._tx() as c:
            lost = [
                r[0] for r in c.execute("SELECT job_id FROM audit_jobs WHERE status = 'running'")
            ]
            c.execute(
                "UPDATE audit_jobs SET status = 'interrupted', ended_at = ?,"
                " detail = 'the audit stopped before this job finished' WHERE status = 'running'",
                (time.time(),),
            )
        return lost

    def _tx(self) -> AbstractContextManager[sqlite3.Connection]:
        return transaction(self._conn, self._write)

    # -- jobs --------------------------------------------------------------------------

    def add_jobs(self, jobs: Iterable[StoredJob]) -> None:
        """Record jobs not yet known; a known job keeps its status and result."""
        with self._tx() as c:
            c.executemany(
                "INSERT OR IGNORE INTO audit_jobs (job_id, kind, path, name) VALUES (?, ?, ?, ?)",
                [(j.job_id, j.kind, j.path, j.name) for j in jobs],
            )

    def started(self, job_id: str, node: str = "") -> None:
        with self._tx() as c:
            c.execute(
                "UPDATE audit_jobs SET status = 'running', node = ?, started_at = ?,"
                " ended_at = NULL, attempts = attempts + 1, detail = '' WHERE job_id = ?",
                (node, time.time(), job_id),
            )

    def finished(
        self,
        job_id: str,
        verdict: str,
        flags: Iterable[str],
        result: dict[str, Any],
        node: str = "",
    ) -> None:
        """The job is done: its verdict and flags (columns a reader can query) and the
        whole ``result`` record, kept as JSON."""
        with self._tx() as c:
            c.execute(
                "UPDATE audit_jobs SET status = 'done', ended_at = ?, verdict = ?, flags = ?,"
                " result = ?, node = CASE WHEN ? = '' THEN node ELSE ? END WHERE job_id = ?",
                (
                    time.time(),
                    verdict,
                    json.dumps(list(flags)),
                    json.dumps(result),
                    node,
                    node,
                    job_id,
                ),
            )

    def interrupted(self, job_id: str, detail: str) -> None:
        """The job's worker was lost: no result, to be run again on resume."""
        with self._tx() as c:
            c.execute(
                "UPDATE audit_jobs SET status = 'interrupted', ended_at = ?, detail = ?"
                " WHERE job_id = ?",
                (time.time(), detail, job_id),
            )

    def jobs(self, statuses: Iterable[str] | None = None) -> list[JobRow]:
        """Every job (or those in ``statuses``), by task name."""
        sql = (
            "SELECT job_id, kind, path, status, attempts, node, started_at, ended_at, detail,"
            " result FROM audit_jobs"
        )
        args: tuple[str, ...] = ()
        if statuses is not None:
            wanted = tuple(statuses)
            sql += f" WHERE status IN ({', '.join('?' * len(wanted))})"
            args = wanted
        sql += " ORDER BY name, path"
        rows = []
        for (
            job_id,
            kind,
            path,
            status,
            attempts,
            node,
            started,
            ended,
            detail,
            result,
        ) in self._conn.execute(sql, args):
            record = json.loads(result) if result else None
            rows.append(
                JobRow(
                    status=status,
                    attempts=attempts,
                    node=node,
                    started_at=started,
                    ended_at=ended,
                    detail=detail,
                    job_id=job_id,
                    kind=kind,
                    path=path,
                    result=record,
                )
            )
        return rows

    def finish_audit(self, status: str) -> None:
        with self._tx() as c:
            c.execute(
                "UPDATE audit SET status = ?, ended_at = ? WHERE id = 1", (status, time.time())
            )

    def info(self) -> dict[str, Any]:
        row = self._conn.execute(
            "SELECT created_at, ended_at, status, host, settings FROM audit WHERE id = 1"
        ).fetchone()
        return {
            "created_at": row[0],
            "ended_at": row[1],
            "status": row[2],
            "host": row[3],
            "settings": json.loads(row[4]),
        }
