"""What the run database and an audit's database share: one owner at a time (an exclusive
``flock`` the kernel drops when the owner dies, however it dies), a WAL connection whose
commits are cheap, transactions under one write lock, and migrations by ``user_version``.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path


def take_owner_lock(path: Path, busy: Exception) -> int:
    """Hold ``path`` (created if needed) exclusively; raise ``busy`` if a live process
    holds it. Closing the returned descriptor releases it."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise busy from None
    return fd


def connect_wal(path: Path) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit), shared by threads."""
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30)
    conn.execute("PRAGMA journal_mode=WAL")
    # NORMAL in WAL mode loses nothing on a process crash (only on power loss), and keeps
    # commits cheap enough to write every row as it happens.
    conn.execute("PRAGMA synchronous=NORMAL")
    return conn


@contextmanager
def transaction(conn: sqlite3.Connection, write: threading.Lock) -> Iterator[sqlite3.Connection]:
    """One write transaction, committed at the end or rolled back on any exception."""
    with write:
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")


def schema_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def migrate(
    conn: sqlite3.Connection,
    write: threading.Lock,
    migrations: Sequence[str],
    path: Path,
    error: type[Exception],
) -> None:
    """Run the migrations past the database's version, each in one transaction; a database
    newer than ``migrations`` raises ``error``."""
    version = schema_version(conn)
    if version > len(migrations):
        raise error(
            f"{path} has schema version {version}, newer than this cleanroom "
            f"({len(migrations)}); upgrade cleanroom to open it"
        )
    for number, script in enumerate(migrations[version:], start=version + 1):
        # executescript would commit on its own; run statements inside one transaction.
        with transaction(conn, write) as c:
            for statement in (s.strip() for s in script.split(";")):
                if statement:
                    c.execute(statement)
            c.execute(f"PRAGMA user_version = {number}")
