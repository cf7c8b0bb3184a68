"""A listing and archive of a remote environment's files made real on the host, without
following anything, so that the host's readers see what a bind mount would show them.

The listing's records are GNU find's ``-printf`` fields, each ended by a NUL byte: kind,
mode, size, time, link target, name (`FIELDS`). Folders, links with their targets (never
resolved), FIFOs and sockets are made as such, a device as the null device whatever it
was, each small regular file with its content from the archive, a regular file past the
cap as a sparse file of its size. Names that climb (``..``) or are empty are left out;
every path is opened below the folder with ``O_NOFOLLOW``. Times are put on the host's
clock, never later than they were (`Clock`).
"""

from __future__ import annotations

import os
import shutil
import stat
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO

FIELDS = 6
# At most this many records of one listing are made real.
MAX_ENTRIES = 10_000


@dataclass(frozen=True)
class Clock:
    """Bounds on a remote clock minus the host's, in nanoseconds."""

    low_ns: int
    high_ns: int

    def earliest_host_ns(self, env_ns: int) -> int:
        """The earliest host time a remote time can be: a time so mapped never looks
        later than it was."""
        return env_ns - self.high_ns


@dataclass(frozen=True)
class Record:
    """One path as a brought-back listing gives it."""

    kind: str
    mode: int
    size: int
    mtime_ns: int
    target: str
    name: str


def parse_records(data: bytes) -> list[Record]:
    """The records of a listing ``_BRING`` wrote (a cut last record is left out)."""
    fields = data.split(b"\0")
    whole = (len(fields) - 1) // FIELDS
    records: list[Record] = []
    for start in range(0, whole * FIELDS, FIELDS):
        kind, mode, size, mtime, target, name = fields[start : start + FIELDS]
        try:
            seconds, _, fraction = mtime.decode("ascii").partition(".")
            nanos = int(seconds) * 1_000_000_000 + int((fraction + "000000000")[:9])
            records.append(
                Record(
                    kind.decode("ascii"),
                    int(mode, 8),
                    int(size),
                    nanos,
                    target.decode("utf-8", "surrogateescape"),
                    name.decode("utf-8", "surrogateescape"),
                )
            )
        except (UnicodeDecodeError, ValueError):
            continue  # a record no find writes: whatever wrote it is left out
        if len(records) >= MAX_ENTRIES:
            break
    return records


def materialize(
    host_dir: Path, records: list[Record], archive: Path | None, cap: int, clock: Clock | None
) -> None:
    """Make ``records`` real under ``host_dir`` (emptied first), with the content of the
    small regular files from ``archive``; nothing is followed, nothing escapes."""
    for child in host_dir.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()
    root = os.open(host_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        placed: list[tuple[str, Record]] = []
        for record in sorted(records, key=lambda r: r.name):
            parts = record.name.split("/")
            if any(p in ("", ".", "..") for p in parts):
                continue
            if _place(root, parts, record, cap):
                placed.append((record.name, record))
        if archive is not None:
            _fill(root, archive, {name for name, r in placed if r.kind == "f"}, cap)
        for name, record in sorted(placed, key=lambda p: p[0], reverse=True):
            when = 0 if clock is None else max(0, clock.earliest_host_ns(record.mtime_ns))
            _at(
                root,
                name.split("/"),
                lambda fd, leaf, t=when: os.utime(
                    leaf, ns=(t, t), dir_fd=fd, follow_symlinks=False
                ),
            )
    finally:
        os.close(root)


def _parent_fd(root: int, parts: list[str]) -> int | None:
    fd = os.dup(root)
    for part in parts[:-1]:
        try:
            nxt = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
        except OSError:
            os.close(fd)
            return None
        os.close(fd)
        fd = nxt
    return fd


def _at(root: int, parts: list[str], act: object) -> None:
    fd = _parent_fd(root, parts)
    if fd is None:
        return
    try:
        act(fd, parts[-1])  # type: ignore[operator]
    except OSError:
        pass
    finally:
        os.close(fd)


def _place(root: int, parts: list[str], record: Record, cap: int) -> bool:
    fd = _parent_fd(root, parts)
    if fd is None:
        return False
    leaf = parts[-1]
    try:
        if record.kind == "d":
            os.mkdir(leaf, 0o777, dir_fd=fd)
            os.chmod(leaf, 0o777, dir_fd=fd, follow_symlinks=False)
        elif record.kind == "l":
            os.symlink(record.target, leaf, dir_fd=fd)
        elif record.kind == "p":
            os.mkfifo(leaf, 0o600, dir_fd=fd)
        elif record.kind == "s":
            os.mknod(leaf, stat.S_IFSOCK | 0o600, dir_fd=fd)
        elif record.kind in ("c", "b"):
            # A device is made as the null device whatever it was: its kind is what the
            # readers report, and nothing on the host reaches the agent's numbers.
            os.mknod(leaf, stat.S_IFCHR | 0o600, os.makedev(1, 3), dir_fd=fd)
        elif record.kind == "f":
            made = os.open(
                leaf, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=fd
            )
            try:
                if record.size > cap:  # its size alone, as a sparse file
                    os.ftruncate(made, record.size)
            finally:
                os.close(made)
        else:
            return False  # a door, a whiteout: nothing the readers know
    except OSError:
        return False
    finally:
        os.close(fd)
    return True


def _fill(root: int, archive: Path, regular: set[str], cap: int) -> None:
    """Write the content of each small regular file the archive holds."""
    try:
        tar = tarfile.open(archive, "r:")  # noqa: SIM115
    except (tarfile.TarError, OSError):
        return
    with tar:
        try:
            for member in tar:
                name = member.name.removeprefix("./")
                if not member.isreg() or name not in regular or member.size > cap:
                    continue
                source = tar.extractfile(member)
                if source is None:
                    continue
                fd = _parent_fd(root, name.split("/"))
                if fd is None:
                    continue
                try:
                    out = os.open(
                        name.split("/")[-1], os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW, dir_fd=fd
                    )
                except OSError:
                    os.close(fd)
                    continue
                try:
                    with os.fdopen(out, "wb") as sink:
                        sink.write(source.read(cap + 1))
                finally:
                    os.close(fd)
        except (tarfile.TarError, OSError):
            return


_HEADER_LINE = 64


class BundleError(Exception):
    """A bundle of listings and archives that is not one."""


def unbundle(
    bundle: Path, count: int, spool: Path, listing_cap: int, archive_cap: int
) -> list[tuple[bytes, Path]]:
    """Each of the ``count`` items of a bundle of listings and archives: its listing (at
    most ``listing_cap``, whole) and its archive, written to a file in ``spool`` (at
    most ``archive_cap``; one cut short gives the files it holds whole).

    A bundle is a header (``cleanroom-bundle N``, then each item's listing's and
    archive's sizes, a line each), then each item's listing and archive, one after
    another. It was written by programs of the environment's: every size is checked."""
    found: list[tuple[bytes, Path]] = []
    with open(bundle, "rb") as data:
        if data.readline(_HEADER_LINE) != f"cleanroom-bundle {count}\n".encode():
            raise BundleError("no bundle's header")
        sizes: list[tuple[int, int]] = []
        for _ in range(count):
            line = data.readline(_HEADER_LINE)
            words = line.split()
            if not line.endswith(b"\n") or len(words) != 2 or not all(w.isdigit() for w in words):
                raise BundleError(f"a size line that is not one: {line[:40]!r}")
            sizes.append((int(words[0]), int(words[1])))
        for n, (listed, archived) in enumerate(sizes):
            if listed > listing_cap:
                raise BundleError(f"a listing of {listed} bytes, over its cap")
            listing = data.read(listed)
            if len(listing) != listed:
                raise BundleError("a listing cut short")
            archive = spool / f"{n}.tar"
            with open(archive, "wb") as out:
                _copy(data, out, min(archived, archive_cap))
            data.seek(max(0, archived - min(archived, archive_cap)), os.SEEK_CUR)
            found.append((listing, archive))
    return found


def _copy(source: IO[bytes], target: IO[bytes], size: int) -> None:
    """At most ``size`` bytes of ``source`` into ``target``."""
    while size > 0:
        chunk = source.read(min(size, 1 << 20))
        if not chunk:
            return
        target.write(chunk)
        size -= len(chunk)
