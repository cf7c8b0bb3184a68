"""Read files an agent may have replaced, on the host, without trusting any of them.

`read_capped` observes what a verifier left in its host folder (a reward file) and says
what it found; `read_regular` reads a file (a checker's result file) or raises
`NotARegularFile`; `read_beneath` reads a file of a folder an environment writes (a
saved document in its home) without following a link at any step below that folder,
so a link the environment left can lead nowhere else; `stat_beneath` looks at one that
way, `write_beneath` plants one (a control's), replacing what is there, and
`make_folders_beneath` makes the folders to plant it in. The readers
look before they open: a FIFO, socket or device node is reported and never opened (a
device opened by root on the host can act), and `read_capped` does not follow links
either. A regular file is then opened
with ``O_NONBLOCK``, checked with ``fstat`` to be the very file that was looked at, and
read only up to the cap (a huge or sparse file costs one small read).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import subprocess
from pathlib import Path

from cleanroom.core.observed_file import FileKind, ObservedFile

# The most `read_regular` reads of one file (documents and checked files: a few MB).
READ_CAP_BYTES = 256 << 20


class NotARegularFile(FileNotFoundError):
    """What is at a path is no regular file to read: a folder, a FIFO, a device, a
    socket, or a file over the cap. To a checker it is the file that is missing."""

    def __init__(self, path: str, what: str) -> None:
        super().__init__(errno.ENOENT, f"not a regular file: {what}", path)


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


def read_capped(folder: Path, name: str, shown_as: str, cap: int) -> ObservedFile:
    """Observe ``folder/name`` (``name`` a single component); ``shown_as`` labels the result."""
    if "/" in name or name in ("", ".", ".."):
        raise ValueError(f"not a single file name: {name!r}")
    dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        return _observe(dir_fd, name, shown_as, cap)
    finally:
        os.close(dir_fd)


def read_regular(path: str | Path, cap: int = READ_CAP_BYTES) -> bytes:
    """The bytes of the regular file at ``path`` (links followed), at most ``cap``.

    `FileNotFoundError` when nothing is there; `NotARegularFile` when it is something
    else, when it is over ``cap``, or when it was replaced while it was opened. Nothing
    but a regular file is ever opened, and never in a way that waits for a writer.
    """
    seen = os.stat(path)
    if not stat.S_ISREG(seen.st_mode):
        raise NotARegularFile(str(path), _kind_of(seen.st_mode))
    if seen.st_size > cap:
        raise NotARegularFile(str(path), f"a file over {cap >> 20} MiB")
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    return _read_what_was_seen(fd, seen, path, cap)


def read_beneath(root: Path, path: Path, cap: int = READ_CAP_BYTES) -> bytes:
    """The bytes of the regular file ``path`` (inside ``root``, which the harness owns),
    at most ``cap``: each folder below ``root`` is opened relative to the one before it
    and the file last, none of them through a link, the file without waiting.

    `FileNotFoundError` when nothing is there (or a link is, in the file's place or a
    folder's: what it points at is not the environment's file); `NotARegularFile` for a
    FIFO, device, socket, folder or a file over ``cap``; `ValueError` for a ``path``
    outside ``root``.
    """
    fd, name = _open_parent(root, path)
    try:
        # Looked at before it is opened: a device node is never opened (as root, an
        # open can act), and what is opened must be what was looked at.
        try:
            seen = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if not stat.S_ISREG(seen.st_mode):
                if stat.S_ISLNK(seen.st_mode):
                    raise FileNotFoundError(errno.ENOENT, "a link, not followed", str(path))
                raise NotARegularFile(str(path), _kind_of(seen.st_mode))
            file_fd = os.open(name, OPEN_FILE_NOFOLLOW, dir_fd=fd)
        except NotARegularFile:
            raise
        except OSError as exc:
            raise _missing_or(exc, path) from None
    finally:
        os.close(fd)
    return _read_what_was_seen(file_fd, seen, path, cap)


def stat_beneath(root: Path, path: Path) -> os.stat_result | None:
    """What is at ``path`` (inside ``root``) as looked at, itself never followed and no
    folder on the way through a link; None when nothing is there."""
    try:
        fd, name = _open_parent(root, path)
    except FileNotFoundError:
        return None
    try:
        return os.stat(name, dir_fd=fd, follow_symlinks=False)
    except OSError:
        return None
    finally:
        os.close(fd)


def write_beneath(root: Path, path: Path, data: bytes, uid: int, gid: int) -> None:
    """Write ``data`` to ``path`` (inside ``root``) as a new file owned by ``uid``:``gid``,
    mode 0600, no folder on the way opened through a link; whatever was there is replaced,
    never written through."""
    fd, name = _open_parent(root, path)
    try:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=fd)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        out = os.open(name, flags, 0o600, dir_fd=fd)
        try:
            os.write(out, data)
            os.fchown(out, uid, gid)
        finally:
            os.close(out)
    finally:
        os.close(fd)


def make_folders_beneath(root: Path, path: Path) -> None:
    """Make the folders that hold ``path`` (inside ``root``) where they are missing, each
    made and opened relative to the one before it, none through a link: a link or a file
    in a folder's place is `FileExistsError`, so nothing is ever made elsewhere."""
    try:
        parts = Path(os.path.abspath(path)).relative_to(os.path.abspath(root)).parts
    except ValueError:
        raise ValueError(f"{path} is not inside {root}") from None
    if not parts or ".." in parts:
        raise ValueError(f"{path} names no file inside {root}")
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts[:-1]:
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, 0o755, dir_fd=fd)
            try:
                inner = os.open(part, OPEN_FOLDER_NOFOLLOW, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise FileExistsError(
                        errno.EEXIST, "a link or a file where a folder should be", str(path)
                    ) from None
                raise
            os.close(fd)
            fd = inner
    finally:
        os.close(fd)


def _open_parent(root: Path, path: Path) -> tuple[int, str]:
    """The folder holding ``path`` (inside ``root``, which the harness owns), opened
    relative to ``root`` one folder at a time and none through a link, and the name of
    ``path`` in it; `FileNotFoundError` when a folder on the way is missing or a link,
    `ValueError` for a ``path`` outside ``root``."""
    try:
        parts = Path(os.path.abspath(path)).relative_to(os.path.abspath(root)).parts
    except ValueError:
        raise ValueError(f"{path} is not inside {root}") from None
    if not parts or ".." in parts:
        raise ValueError(f"{path} names no file inside {root}")
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts[:-1]:
            try:
                inner = os.open(part, OPEN_FOLDER_NOFOLLOW, dir_fd=fd)
            except OSError as exc:
                raise _missing_or(exc, path) from None
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd, parts[-1]


def _read_what_was_seen(fd: int, seen: os.stat_result, path: str | Path, cap: int) -> bytes:
    """Up to ``cap`` bytes of the regular file open on ``fd`` (closed here), which must
    be the very file ``seen`` looked at; `NotARegularFile` otherwise or over ``cap``."""
    try:
        info = os.fstat(fd)
        if (info.st_dev, info.st_ino) != (seen.st_dev, seen.st_ino) or not stat.S_ISREG(
            info.st_mode
        ):
            raise NotARegularFile(str(path), "a file replaced while it was opened")
        if info.st_size > cap:
            raise NotARegularFile(str(path), f"a file over {cap >> 20} MiB")
        with os.fdopen(os.dup(fd), "rb") as fh:
            data = fh.read(cap + 1)
    finally:
        os.close(fd)
    if len(data) > cap:
        raise NotARegularFile(str(path), f"a file over {cap >> 20} MiB")
    return data


# How a file or folder an environment wrote is opened: never through a link, and a file
# never in a way that waits (a FIFO opens at once). `tree_scan` walks with the same.
OPEN_FOLDER_NOFOLLOW = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
OPEN_FILE_NOFOLLOW = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


def _missing_or(exc: OSError, path: Path) -> OSError:
    """A link or a non-folder on the way reads as nothing there; other errors stand."""
    if isinstance(exc, FileNotFoundError):
        return exc
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        why = "a link, not followed, or no folder on the way"
        return FileNotFoundError(errno.ENOENT, why, str(path))
    return exc


def _kind_of(mode: int) -> str:
    return "a " + _KINDS.get(stat.S_IFMT(mode), "special file")


def _observe(dir_fd: int, name: str, shown_as: str, cap: int) -> ObservedFile:
    # Look before opening: opening a device node as root can have effects of its own, so
    # only what is a regular file when looked at is ever opened.
    try:
        seen = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return ObservedFile.missing(shown_as)
    if stat.S_ISLNK(seen.st_mode):
        target = ""
        with contextlib.suppress(OSError):
            target = os.readlink(name, dir_fd=dir_fd)
        return ObservedFile(shown_as, FileKind.SYMLINK, note=target)
    if not stat.S_ISREG(seen.st_mode):
        kind = _KINDS.get(stat.S_IFMT(seen.st_mode), "special file")
        return ObservedFile(shown_as, FileKind.OTHER, size=seen.st_size, note=kind)
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY
    try:
        fd = os.open(name, flags, dir_fd=dir_fd)
    except FileNotFoundError:
        return ObservedFile.missing(shown_as)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENXIO):
            return ObservedFile(shown_as, FileKind.OTHER, note="replaced while it was read")
        raise
    try:
        info = os.fstat(fd)
        if (info.st_dev, info.st_ino) != (seen.st_dev, seen.st_ino) or not stat.S_ISREG(
            info.st_mode
        ):
            return ObservedFile(shown_as, FileKind.OTHER, note="replaced while it was read")
        data = os.read(fd, cap + 1)
        if info.st_size > cap or len(data) > cap:
            return ObservedFile(
                shown_as, FileKind.OVERSIZE, data[:cap], max(info.st_size, len(data))
            )
        return ObservedFile(shown_as, FileKind.REGULAR, data, info.st_size)
    finally:
        os.close(fd)
