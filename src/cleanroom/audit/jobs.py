"""What an audit audits: one job per task, found in the paths it was given.

A container task is a folder holding ``task.toml`` (Harbor's layout); an OSWorld task is
a ``.json`` task file, audited with the oracle and near misses of its ``.audit.toml``
beside it when it has one (`JobKind.OSWORLD`), and otherwise by execution in a desktop
environment (`JobKind.OSWORLD_DESKTOP`, no oracle needed). OSWorld's index
(``test_all.json``) stands for every task file it names. A folder that is none of these
is searched one level down for all of them (indexes in it are left out).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from cleanroom.audit.osworld_spec import spec_path
from cleanroom.verifiers.osworld.task import TaskFileError
from cleanroom.verifiers.osworld.task_list import index_task_files, task_index


class JobKind(StrEnum):
    CONTAINER = "container"
    OSWORLD = "osworld"
    OSWORLD_DESKTOP = "osworld-desktop"


class AuditInputError(ValueError):
    """A path given to the audit holds no task it can audit."""


@dataclass(frozen=True)
class AuditJob:
    """One task to audit: what it is and where it lives (an absolute path)."""

    kind: JobKind
    path: str

    @property
    def id(self) -> str:
        """A stable name for the job: the task's kind and path, hashed short, after the
        task's own name so that a reader sees which task it is."""
        digest = hashlib.sha256(f"{self.kind}:{self.path}".encode()).hexdigest()[:10]
        return f"{self.name}-{digest}"

    @property
    def name(self) -> str:
        path = Path(self.path)
        return path.name if self.kind is JobKind.CONTAINER else path.stem

    def to_json(self) -> dict[str, str]:
        return {"kind": self.kind.value, "path": self.path, "id": self.id, "name": self.name}

    @classmethod
    def from_json(cls, data: dict[str, str]) -> AuditJob:
        return cls(JobKind(data["kind"]), data["path"])


def find_jobs(paths: list[Path]) -> list[AuditJob]:
    """Every task under ``paths``, each once, in a stable order; `AuditInputError` naming
    a path that holds none."""
    jobs: dict[str, AuditJob] = {}
    for given in paths:
        found = _jobs_at(given.resolve())
        if not found:
            raise AuditInputError(
                f"{given}: no task here (a folder with task.toml, an OSWorld .json task "
                "file or index, or a folder of either)"
            )
        for job in found:
            jobs.setdefault(job.id, job)
    return sorted(jobs.values(), key=lambda j: (j.name, j.path))


def _jobs_at(path: Path) -> list[AuditJob]:
    if not path.exists():
        raise AuditInputError(f"{path}: no such file or folder")
    if path.is_file():
        if not _is_osworld(path):
            return []
        index = task_index(path)
        if index is not None:
            try:
                return [_osworld_job(f.resolve()) for f in index_task_files(path, index)]
            except TaskFileError as exc:
                raise AuditInputError(str(exc)) from exc
        return [_osworld_job(path)]
    if (path / "task.toml").is_file():
        return [AuditJob(JobKind.CONTAINER, str(path))]
    found: list[AuditJob] = []
    for child in sorted(path.iterdir()):
        if child.is_dir() and (child / "task.toml").is_file():
            found.append(AuditJob(JobKind.CONTAINER, str(child)))
        elif child.is_file() and _is_osworld(child) and task_index(child) is None:
            found.append(_osworld_job(child))
    return found


def _is_osworld(path: Path) -> bool:
    return path.suffix == ".json"


def _osworld_job(task_file: Path) -> AuditJob:
    """With an oracle beside it, the oracle audit; without, the audit by execution."""
    kind = JobKind.OSWORLD if spec_path(task_file).is_file() else JobKind.OSWORLD_DESKTOP
    return AuditJob(kind, str(task_file))
