"""Read what the verifier left in its host folder without trusting any of it.

Every file is looked at with ``lstat`` relative to the folder's own descriptor before
anything is opened: a link, FIFO, socket or device node is reported and never opened (a
device opened by root on the host can act). A regular file is then opened with
``O_NOFOLLOW | O_NONBLOCK``, checked with ``fstat`` to be the very file that was looked
at, and read only up to the cap (a huge or sparse file costs one small read).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import subprocess
from pathlib import Path

from cleanroom.verifiers.container.reward import REWARD_CAP_BYTES, FileKind, RewardFile

_KINDS = {
    stat.S_IFIFO: "fifo",
    stat.S_IFDIR: "directory",
    stat.S_IFCHR: "character device",
    stat.S_IFBLK: "block device",
    stat.S_IFSOCK: "socket",
}


def remove_tree(folder: Path) -> None:
    """Remove a folder the agent may have filled (trees past PATH_MAX, device nodes).

    ``rm -rf`` walks by descriptors without recursion limits, unlinks without opening,
    and stays on this file system.
    """
    subprocess.run(
        ["rm", "-rf", "--one-file-system", "--", str(folder)],
        check=False,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


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
    # Look before opening: opening a device node as root can have effects of its own, so
    # only what is a regular file when looked at is ever opened.
    try:
        seen = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return RewardFile.missing(shown_as)
    if stat.S_ISLNK(seen.st_mode):
        target = ""
        with contextlib.suppress(OSError):
            target = os.readlink(name, dir_fd=dir_fd)
        return RewardFile(shown_as, FileKind.SYMLINK, note=target)
    if not stat.S_ISREG(seen.st_mode):
        kind = _KINDS.get(stat.S_IFMT(seen.st_mode), "special file")
        return RewardFile(shown_as, FileKind.OTHER, size=seen.st_size, note=kind)
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY
    try:
        fd = os.open(name, flags, dir_fd=dir_fd)
    except FileNotFoundError:
        return RewardFile.missing(shown_as)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENXIO):
            return RewardFile(shown_as, FileKind.OTHER, note="replaced while it was read")
        raise
    try:
        info = os.fstat(fd)
        if (info.st_dev, info.st_ino) != (seen.st_dev, seen.st_ino) or not stat.S_ISREG(
            info.st_mode
        ):
            return RewardFile(shown_as, FileKind.OTHER, note="replaced while it was read")
        data = os.read(fd, cap + 1)
        if info.st_size > cap or len(data) > cap:
            return RewardFile(shown_as, FileKind.OVERSIZE, data[:cap], max(info.st_size, len(data)))
        return RewardFile(shown_as, FileKind.REGULAR, data, info.st_size)
    finally:
        os.close(fd)
