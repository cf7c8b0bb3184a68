"""What a pool records on disk before it creates anything, so that a pool whose owner died
(a supervisor killed with SIGKILL leaves its users, homes, displays, programs and
containers behind) can be found and removed later.

One JSON file per pool in `RECORDS_DIR`, written before the first user exists and
deleted after the pool has removed everything. It names the owner process by pid and
start time (a later process reusing the pid is not the owner), the pool's folder, its run
folder, its users, and whether it ran containers. Everything else a dead pool left is
found from these: processes by user or by a command line naming the pool's folder,
containers by label.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cleanroom.environments.session.processes import alive, start_time

RECORDS_DIR = Path("/var/lib/cleanroom/pool-records")


@dataclass(frozen=True)
class PoolRecord:
    """One pool as recorded by the process that owns it."""

    pool_id: str
    root: Path
    run_dir: Path
    owner_pid: int
    owner_start: int | None
    users: tuple[str, ...]
    containers: bool = False
    harness_authority: str | None = None
    created_at: float = field(default_factory=time.time)

    @classmethod
    def for_this_process(
        cls,
        pool_id: str,
        root: Path,
        run_dir: Path,
        users: list[str],
        *,
        containers: bool,
        harness_authority: str | None,
    ) -> PoolRecord:
        """A record naming the calling process as the pool's owner."""
        pid = os.getpid()
        return cls(
            pool_id,
            root,
            run_dir,
            pid,
            start_time(pid),
            tuple(users),
            containers,
            harness_authority,
        )

    def owner_alive(self) -> bool:
        """Whether the owner process still runs (the same process, not a pid reuse)."""
        return alive(self.owner_pid) and start_time(self.owner_pid) == self.owner_start

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "pool_id": self.pool_id,
            "root": str(self.root),
            "run_dir": str(self.run_dir),
            "owner_pid": self.owner_pid,
            "owner_start": self.owner_start,
            "users": list(self.users),
            "containers": self.containers,
            "harness_authority": self.harness_authority,
            "created_at": self.created_at,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PoolRecord:
        """The inverse of `to_json`."""
        return cls(
            pool_id=str(data["pool_id"]),
            root=Path(data["root"]),
            run_dir=Path(data["run_dir"]),
            owner_pid=int(data["owner_pid"]),
            owner_start=data.get("owner_start"),
            users=tuple(data.get("users", ())),
            containers=bool(data.get("containers", False)),
            harness_authority=data.get("harness_authority"),
            created_at=float(data.get("created_at", 0.0)),
        )


def record_path(pool_id: str, records_dir: Path = RECORDS_DIR) -> Path:
    """Where the record of ``pool_id`` lives."""
    return records_dir / f"{pool_id}.json"


def write_record(record: PoolRecord, records_dir: Path = RECORDS_DIR) -> Path:
    """Write (or replace) a pool's record; readers never see half a file."""
    records_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = record_path(record.pool_id, records_dir)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record.to_json(), indent=2, sort_keys=True))
    tmp.replace(path)
    return path


def read_record(pool_id: str, records_dir: Path = RECORDS_DIR) -> PoolRecord | None:
    """The record of ``pool_id``, or None if there is none (or it cannot be read)."""
    try:
        return PoolRecord.from_json(json.loads(record_path(pool_id, records_dir).read_text()))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def read_records(records_dir: Path = RECORDS_DIR) -> list[PoolRecord]:
    """Every readable record, oldest first."""
    if not records_dir.is_dir():
        return []
    found = [read_record(p.stem, records_dir) for p in records_dir.glob("*.json")]
    return sorted((r for r in found if r is not None), key=lambda r: r.created_at)


def remove_record(pool_id: str, records_dir: Path = RECORDS_DIR) -> None:
    """Delete a pool's record (missing is fine)."""
    with contextlib.suppress(FileNotFoundError):
        record_path(pool_id, records_dir).unlink()
