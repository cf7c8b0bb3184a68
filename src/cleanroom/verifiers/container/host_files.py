"""Read what the verifier left in its host folder without trusting any of it.

Every file is opened relative to the folder's own descriptor with ``O_NOFOLLOW`` (a link
is reported, never followed out of the folder) and ``O_NONBLOCK`` (a FIFO is reported,
never waited on), checked to be a regular file with ``fstat``, and read only up to the
cap (a huge or sparse file costs one small read).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path

from cleanroom.verifiers.container.reward import REWARD_CAP_BYTES, FileKind, RewardFile

_KINDS = {
    stat.S_IFIFO: "fifo",
    stat.S_IFDIR: "directory",
    stat.S_IFCHR: "character device",
    stat.S_IFBLK: "block device",
    stat.S_IFSOCK: "socket",
}


def read_capped(folder: Path, name: str, shown_as: str, cap: int = REWARD_CAP_BYTES) -> RewardFile:
    """Observe ``folder/name`` (``name`` a single component); ``shown_as`` labels the result."""
    if "/" in name or name in ("", ".", ".."):
        raise ValueError(f"not a single file name: {name!r}")
    dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        return _observe(dir_fd, name, shown_as, cap)
    finally:
        os.close(dir_fd)


def _observe(dir_fd: int, name: str, shown_as: str, cap: int) -> RewardFile:
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY
    try:
        fd = os.open(name, flags, dir_fd=dir_fd)
    except FileNotFoundError:
        return RewardFile.missing(shown_as)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            target = ""
            with contextlib.suppress(OSError):
                target = os.readlink(name, dir_fd=dir_fd)
            return RewardFile(shown_as, FileKind.SYMLINK, note=target)
        if exc.errno == errno.ENXIO:  # a socket, or a FIFO opened write-side
            return RewardFile(shown_as, FileKind.OTHER, note="socket or fifo")
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = _KINDS.get(stat.S_IFMT(info.st_mode), "special file")
            return RewardFile(shown_as, FileKind.OTHER, size=info.st_size, note=kind)
        data = os.read(fd, cap + 1)
        if info.st_size > cap or len(data) > cap:
            return RewardFile(shown_as, FileKind.OVERSIZE, data[:cap], max(info.st_size, len(data)))
        return RewardFile(shown_as, FileKind.REGULAR, data, info.st_size)
    finally:
        os.close(fd)
