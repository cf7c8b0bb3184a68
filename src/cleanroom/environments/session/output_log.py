"""Program output copied into the host's log folder with a cap per log.

A program's stdout and stderr never point at a host file: they are a pipe the harness
drains. Whatever holds the pipe's write end (the program, a child, or another process
of the environment that took the descriptor) can write without end, and the harness
writes at most `PROGRAM_LOG_MAX_BYTES` of it into the log, then one note, and drops the
rest while still draining (a writer is never blocked on a full pipe). The host disk,
which holds the run database, gets no more than the cap from any one log.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

from cleanroom.core.capped import ByteQuota

# The most of a program's output one log on the host keeps (whatever wrote it).
PROGRAM_LOG_MAX_BYTES = 8 << 20
_CHUNK = 64 << 10


def dropped_note(cap: int) -> bytes:
    """The line a log ends with once its cap is reached."""
    return f"\n[cleanroom: output past {cap} bytes of this log was dropped]\n".encode()


def copy_capped(chunks: Iterable[bytes], log: Path, cap: int = PROGRAM_LOG_MAX_BYTES) -> int:
    """Append ``chunks`` to ``log`` until it holds ``cap`` bytes (counting what it held),
    then the note once; read every chunk to the end either way. Return the bytes dropped."""
    with open(log, "ab") as out:
        quota = ByteQuota(cap, out.tell())
        noted = quota.used >= cap  # a log already full was noted when it filled
        for chunk in chunks:
            granted = quota.take(len(chunk))
            if granted:
                out.write(chunk[:granted])
                out.flush()
            if quota.dropped and not noted:
                out.write(dropped_note(cap))
                out.flush()
                noted = True
        return quota.dropped


def _reads(fd: int) -> Iterator[bytes]:
    with contextlib.suppress(OSError):
        while chunk := os.read(fd, _CHUNK):
            yield chunk


def _drain(fd: int, log: Path, cap: int) -> None:
    try:
        with contextlib.suppress(OSError):
            copy_capped(_reads(fd), log, cap)
        # A log that cannot be written still has its pipe drained: its writer never blocks.
        for _ in _reads(fd):
            pass
    finally:
        os.close(fd)


def capped_pipe(log: Path, cap: int = PROGRAM_LOG_MAX_BYTES) -> int:
    """A pipe's write end, to hand a program as its stdout and stderr (then close it):
    a thread copies what comes through into ``log`` under ``cap`` until every copy of the
    write end is closed."""
    read_fd, write_fd = os.pipe2(os.O_CLOEXEC)
    try:
        threading.Thread(
            target=_drain, args=(read_fd, log, cap), name=f"log-{log.name}", daemon=True
        ).start()
    except BaseException:
        os.close(read_fd)
        os.close(write_fd)
        raise
    return write_fd
