"""What a reader found at a path an agent controls, as a record: the readers are in
`cleanroom.host_files` (and the container runtime's), the judges of what they found
(reward parsing, the verdict) read only this."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class FileKind(StrEnum):
    """What a reader found at a path an agent controls."""

    MISSING = "missing"
    REGULAR = "regular"
    OVERSIZE = "oversize"  # a regular file over the size cap; ``data`` holds its first bytes
    SYMLINK = "symlink"  # refused: readers never follow links
    OTHER = "other"  # a FIFO, directory, device or socket; ``note`` says which


@dataclass(frozen=True)
class ObservedFile:
    """One observation of one path an agent controls, made without trusting what is there."""

    path: str
    kind: FileKind
    data: bytes = b""
    size: int | None = None
    note: str = ""

    @classmethod
    def missing(cls, path: str) -> ObservedFile:
        return cls(path, FileKind.MISSING)
