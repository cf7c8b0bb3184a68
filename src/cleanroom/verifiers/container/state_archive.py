"""The agent's state on its way to the verifier: a tar archive, checked and filtered.

Sealed verification carries the state paths (the work dir and what ``[verifier] state``
names) from the agent's container into the verifier's as tar archives. What the agent put
there is hostile input, so before it is unpacked:

- device nodes and sockets are dropped (a verifier must not be handed a device, and the
  daemon unpacks as root whatever the verifier container's capabilities are); each one
  dropped is listed;
- a member name within one file name (``NAME_MAX``) of ``PATH_MAX`` makes the state
  unusable: no program in the verifier could open what lies below it, and the daemon's
  archiver silently stops there (seen: a 7,500-byte deep tree arrives cut at 4,093 bytes).
  That is the agent's doing (``workspace_broken``), found here rather than carried over
  as a quietly truncated tree.

FIFOs, links and everything else are state and pass unchanged.
"""

from __future__ import annotations

import tarfile
from dataclasses import dataclass, field
from typing import IO

PATH_MAX = 4096
NAME_MAX = 255
LONGEST_NAME = PATH_MAX - NAME_MAX - 1
SHOWN = 20


class StateArchiveError(Exception):
    """The archive of what the agent left could not be read: its content is the cause."""


@dataclass
class StateScan:
    """What one pass over a state archive found."""

    members: int = 0
    dropped: list[str] = field(default_factory=list)
    too_long: str = ""


def scan(archive: IO[bytes]) -> StateScan:
    """Read a tar stream once and say what must be dropped or refused."""
    found = StateScan()
    try:
        with tarfile.open(fileobj=archive, mode="r|") as tar:
            for member in tar:
                found.members += 1
                if _dropped(member):
                    found.dropped.append(member.name)
                # Names are bytes on disk: one that is not UTF-8 is still a name.
                raw_name = member.name.encode("utf-8", "surrogateescape")
                if not found.too_long and len(raw_name) >= LONGEST_NAME:
                    found.too_long = member.name[:120] + "..."
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise StateArchiveError(f"the state archive is unreadable: {exc}") from exc
    return found


def without_dropped(archive: IO[bytes], out: IO[bytes]) -> None:
    """Copy a tar stream to ``out``, leaving out device nodes and sockets."""
    try:
        with (
            tarfile.open(fileobj=archive, mode="r|") as src,
            tarfile.open(fileobj=out, mode="w|", format=tarfile.PAX_FORMAT) as dst,
        ):
            for member in src:
                if _dropped(member):
                    continue
                data = src.extractfile(member) if member.isreg() else None
                dst.addfile(member, data)
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise StateArchiveError(f"the state archive is unreadable: {exc}") from exc


def copy_capped(chunks: object, out: IO[bytes], cap: int) -> int | None:
    """Write an iterable of byte chunks to ``out``; the byte count, or None past ``cap``."""
    total = 0
    for chunk in chunks:  # type: ignore[attr-defined]
        total += len(chunk)
        if total > cap:
            return None
        out.write(chunk)
    return total


def _dropped(member: tarfile.TarInfo) -> bool:
    # Sockets have no tar type of their own; anything the tar module does not know as a
    # file, folder, link or FIFO is dropped with the devices.
    return (
        member.ischr()
        or member.isblk()
        or not (
            member.isreg() or member.isdir() or member.issym() or member.islnk() or member.isfifo()
        )
    )


def rewind(archive: IO[bytes]) -> IO[bytes]:
    """Seek to the start and return the same file, for a second pass."""
    archive.seek(0)
    return archive
