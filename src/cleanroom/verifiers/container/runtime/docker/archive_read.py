"""One file observed through the Docker archive API: nothing runs in the container.

The daemon answers ``GET /containers/{id}/archive?path=`` with the path's stat (a Go
``FileMode``) and a tar stream, and it does both itself, outside the container: no
program the agent could have replaced (``sh``, ``stat``, ``head``) takes part. The rules
are the host reader's (`cleanroom.host_files.read_capped`): a link is reported with its
target and never followed, a FIFO, socket, device or folder is reported from the stat
alone and its stream is never read, and a regular file is read only up to the cap (a huge
file costs its first bytes). The tar member must agree with the stat: a path replaced
between the two is reported as such, not read.
"""

from __future__ import annotations

import io
import tarfile
from collections.abc import Iterator, Mapping
from typing import Any

from cleanroom.core.observed_file import FileKind, ObservedFile

# Go's os.FileMode type bits, as the archive endpoint reports them.
_MODE_DIR = 1 << 31
_MODE_SYMLINK = 1 << 27
_MODE_DEVICE = 1 << 26
_MODE_NAMED_PIPE = 1 << 25
_MODE_SOCKET = 1 << 24
_MODE_CHAR_DEVICE = 1 << 21
_MODE_IRREGULAR = 1 << 19

# What the stream may carry besides the file's bytes (tar and PAX headers, extended
# attributes) before the read is given up as not a single small file.
HEADROOM_BYTES = 1 << 20


class ArchiveReadError(Exception):
    """The tar stream did not hold what its stat announced (cut short, unreadable)."""


def kind_of_mode(mode: int) -> tuple[FileKind, str]:
    """The kind of file a Go ``FileMode`` names, and a note for anything not regular."""
    if mode & _MODE_SYMLINK:
        return FileKind.SYMLINK, ""
    if mode & _MODE_DIR:
        return FileKind.OTHER, "directory"
    if mode & _MODE_NAMED_PIPE:
        return FileKind.OTHER, "fifo"
    if mode & _MODE_SOCKET:
        return FileKind.OTHER, "socket"
    if mode & _MODE_DEVICE:
        what = "character device" if mode & _MODE_CHAR_DEVICE else "block device"
        return FileKind.OTHER, what
    if mode & _MODE_IRREGULAR:
        return FileKind.OTHER, "special file"
    return FileKind.REGULAR, ""


def observe(path: str, stat: Mapping[str, Any], chunks: Iterator[bytes], cap: int) -> ObservedFile:
    """What ``path`` is, from its archive stat and, for a regular file, its first member.

    Only a regular file's stream is read, and only up to ``cap + 1`` bytes of content.
    `ArchiveReadError` when the stream is cut short or is not a tar archive.
    """
    kind, note = kind_of_mode(int(stat.get("mode", 0)))
    if kind is FileKind.SYMLINK:
        return ObservedFile(path, kind, note=str(stat.get("linkTarget", "")))
    if kind is not FileKind.REGULAR:
        return ObservedFile(path, kind, size=_int(stat.get("size")), note=note)
    stream = _ChunkStream(chunks, cap + 1 + HEADROOM_BYTES)
    try:
        with tarfile.open(fileobj=stream, mode="r|") as tar:
            member = tar.next()
            if member is None:
                raise ArchiveReadError(f"the archive of {path} is empty")
            if not member.isreg():
                return ObservedFile(path, FileKind.OTHER, note="replaced while it was read")
            body = tar.extractfile(member)
            data = body.read(cap + 1) if body is not None else b""
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise ArchiveReadError(f"the archive of {path} is unreadable: {exc}") from exc
    if len(data) < min(member.size, cap + 1):
        raise ArchiveReadError(f"{len(data)} bytes of {path} came back of {member.size}")
    if member.size > cap:
        return ObservedFile(path, FileKind.OVERSIZE, data[:cap], member.size)
    return ObservedFile(path, FileKind.REGULAR, data, member.size)


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class _ChunkStream(io.RawIOBase):
    """A readable file over an iterator of byte chunks that refuses to go past ``limit``."""

    def __init__(self, chunks: Iterator[bytes], limit: int) -> None:
        self._chunks = chunks
        self._pending = b""
        self._left = limit

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._pending:
            chunk = next(self._chunks, None)
            if chunk is None:
                return 0
            self._pending = chunk
        n = min(len(buffer), len(self._pending))
        if n > self._left:
            raise OSError(f"the archive goes on past {self._left} more bytes")
        buffer[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        self._left -= n
        return n
