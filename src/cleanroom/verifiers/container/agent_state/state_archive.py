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

Every member is the state path's own name or beneath it, and so is a hard link's target:
a name that climbs (``..``), is absolute, or lies beside the path would be unpacked
outside it, over the verifier's tests or its toolchain. A daemon's archiver never writes
one (podman's own naming is mended before, `rooted`); an archiver the agent controls (the
generic path's ``tar`` runs in the agent's environment) may, and that is the agent's
doing.

FIFOs, links and everything else are state and pass unchanged. Each pass records the
archive's folders and links (a link's target): where a link leads is decided in the
verifier's container, once the state is installed (`links`), and the tree answers for
the archive's own paths there without asking the daemon. Files are left out of it: a
file and a missing name stop a link's resolution alike, and a work dir of a million
files costs no memory here.

An artifact (Harbor's ``/logs/artifacts`` and the task's ``artifacts``) is a file the
agent hands the verifier, not a piece of its environment, so it passes the stricter rules
of Harbor's own carrying (`ArtifactRules`): FIFOs are dropped too, set-id bits are
cleared, and what the task's ``exclude`` patterns name is left out. Its links are the
state's: resolved where the verifier sees them, by the same rule.
"""

from __future__ import annotations

import fnmatch
import tarfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import IO

from cleanroom.verifiers.container.agent_state.links import Entry, EntryKind

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
    # The folders and links kept, by member name (``app/src``), a link with its target.
    tree: dict[str, Entry] = field(default_factory=dict)


@dataclass(frozen=True)
class ArtifactRules:
    """The rules an artifact's archive passes besides the state's: ``exclude`` holds
    Harbor's ``tar --exclude`` patterns (unanchored; ``*`` matches ``/`` too)."""

    exclude: tuple[str, ...] = ()


def scan(
    archive: IO[bytes], artifact: ArtifactRules | None = None, top: str | None = None
) -> StateScan:
    """Read a tar stream once and say what must be dropped or refused; with ``top``
    (the state path's own name), `StateArchiveError` for a member, or a hard link's
    target, that is not ``top`` or beneath it."""
    found = StateScan()
    try:
        with tarfile.open(fileobj=archive, mode="r|") as tar:
            kept: set[str] = set()
            for member in tar:
                found.members += 1
                if top is not None:
                    _confined(member, top)
                if artifact is not None and excluded(member.name, artifact.exclude):
                    continue
                if _dropped(member, artifact) or _orphan_link(member, kept):
                    found.dropped.append(member.name)
                else:
                    kept.add(member.name)
                    entry = entry_of(member)
                    if entry.kind in (EntryKind.FOLDER, EntryKind.LINK):
                        found.tree[member.name.rstrip("/")] = entry
                # Names are bytes on disk: one that is not UTF-8 is still a name.
                raw_name = member.name.encode("utf-8", "surrogateescape")
                if not found.too_long and len(raw_name) >= LONGEST_NAME:
                    found.too_long = member.name[:120] + "..."
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise StateArchiveError(f"the state archive is unreadable: {exc}") from exc
    return found


def _confined(member: tarfile.TarInfo, top: str) -> None:
    """Refuse a member that would be unpacked outside the state path ``top``."""
    names = [("member", member.name)]
    if member.islnk():
        names.append(("hard link target", member.linkname))
    for what, name in names:
        parts = name.rstrip("/").split("/")
        if parts[0] != top or any(p in ("", ".", "..") for p in parts):
            raise StateArchiveError(
                f"the archive of {top} holds a {what} outside it: {name[:120]!r}"
            )


def without_dropped(
    archive: IO[bytes], out: IO[bytes], artifact: ArtifactRules | None = None
) -> None:
    """Copy a tar stream to ``out``, leaving out device nodes and sockets (and, for an
    artifact, what `ArtifactRules` leave out, with set-id bits cleared)."""
    try:
        with (
            tarfile.open(fileobj=archive, mode="r|") as src,
            tarfile.open(fileobj=out, mode="w|", format=tarfile.PAX_FORMAT) as dst,
        ):
            kept: set[str] = set()
            for member in src:
                if (
                    (artifact is not None and excluded(member.name, artifact.exclude))
                    or _dropped(member, artifact)
                    or _orphan_link(member, kept)
                ):
                    continue
                kept.add(member.name)
                if artifact is not None:
                    member.mode &= ~0o7000
                data = src.extractfile(member) if member.isreg() else None
                dst.addfile(member, data)
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise StateArchiveError(f"the state archive is unreadable: {exc}") from exc


class ArchiveNotRooted(Exception):
    """A daemon's archive of a path holds a member that is neither the path's own name
    nor beneath it: the daemon's fault, not the agent's (an agent names files, never the
    prefix the daemon gives them)."""


def rooted(archive: IO[bytes], out: IO[bytes], top: str) -> None:
    """Copy a tar stream to ``out`` with every member named ``top`` or beneath it, as
    Docker names an archive of a path. podman 4 names the members of an archive of a
    stopped or paused container's volume ``''`` (the path itself) and ``/x`` (beneath
    it); those are renamed. `ArchiveNotRooted` for any other name."""
    try:
        with (
            tarfile.open(fileobj=archive, mode="r|") as src,
            tarfile.open(fileobj=out, mode="w|", format=tarfile.PAX_FORMAT) as dst,
        ):
            for member in src:
                name = member.name
                if name in ("", ".", "/"):
                    member.name = top
                elif name.startswith("/"):
                    member.name = top + name.rstrip("/")
                elif name != top and not name.startswith(top + "/"):
                    raise ArchiveNotRooted(f"the archive of {top} holds {name[:120]!r}")
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


def excluded(name: str, patterns: Sequence[str]) -> bool:
    """Whether a member (``top/a/b``) is left out by ``tar --exclude`` patterns, which
    match any trailing run of its path below the top, or of a folder above it."""
    parts = name.strip("/").split("/")[1:]
    return any(
        fnmatch.fnmatchcase("/".join(parts[start:end]), pattern)
        for end in range(1, len(parts) + 1)
        for start in range(end)
        for pattern in patterns
    )


def entry_of(member: tarfile.TarInfo) -> Entry:
    """What a member will be once unpacked, as resolving a link needs to know it."""
    if member.issym():
        return Entry(EntryKind.LINK, member.linkname)
    if member.isdir():
        return Entry(EntryKind.FOLDER)
    if member.isreg() or member.islnk():
        return Entry(EntryKind.FILE)
    return Entry(EntryKind.OTHER)


def _orphan_link(member: tarfile.TarInfo, kept: set[str]) -> bool:
    # A hard link to a member left out would fail the whole unpacking in the verifier.
    return member.islnk() and member.linkname not in kept


def _dropped(member: tarfile.TarInfo, artifact: ArtifactRules | None = None) -> bool:
    # Sockets have no tar type of their own; anything the tar module does not know as a
    # file, folder, link or FIFO is dropped with the devices.
    if artifact is not None and member.isfifo():
        return True
    return (
        member.ischr()
        or member.isblk()
        or not (
            member.isreg() or member.isdir() or member.issym() or member.islnk() or member.isfifo()
        )
    )


@dataclass(frozen=True)
class FrozenLink:
    """What replaces one link member of a state archive: a link to ``target``, or (with
    ``copy``) the members of ``copy``, an archive whose top member is named ``top``,
    renamed to the link's name."""

    target: str = ""
    copy: IO[bytes] | None = None
    top: str = ""


def with_frozen(archive: IO[bytes], out: IO[bytes], frozen: dict[str, FrozenLink]) -> None:
    """Copy a (checked) tar stream to ``out`` with each link member named in ``frozen``
    replaced as its `FrozenLink` says."""
    try:
        with (
            tarfile.open(fileobj=archive, mode="r|") as src,
            tarfile.open(fileobj=out, mode="w|", format=tarfile.PAX_FORMAT) as dst,
        ):
            for member in src:
                name = member.name.rstrip("/")
                replacement = frozen.get(name) if member.issym() else None
                if replacement is None:
                    data = src.extractfile(member) if member.isreg() else None
                    dst.addfile(member, data)
                elif replacement.copy is None:
                    member.linkname = replacement.target
                    dst.addfile(member)
                else:
                    _splice(rewind(replacement.copy), replacement.top, name, dst)
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise StateArchiveError(f"the state archive is unreadable: {exc}") from exc


def _splice(copy: IO[bytes], top: str, name: str, dst: tarfile.TarFile) -> None:
    """Add the members of ``copy`` to ``dst``, its top ``top`` renamed ``name``."""
    with tarfile.open(fileobj=copy, mode="r|") as src:
        for member in src:
            member.name = name + member.name.rstrip("/")[len(top) :]
            if member.islnk():  # a hard link names a member of the same archive
                member.linkname = name + member.linkname[len(top) :]
            data = src.extractfile(member) if member.isreg() else None
            dst.addfile(member, data)


def files_named(archive: IO[bytes], names: set[str]) -> set[str]:
    """The members among ``names`` that are in the archive as anything but a folder or
    a link: the files and FIFOs the scan's tree leaves out."""
    found: set[str] = set()
    try:
        with tarfile.open(fileobj=archive, mode="r|") as tar:
            for member in tar:
                name = member.name.rstrip("/")
                if name in names and not (member.isdir() or member.issym()):
                    found.add(name)
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise StateArchiveError(f"the state archive is unreadable: {exc}") from exc
    return found


def rewind(archive: IO[bytes]) -> IO[bytes]:
    """Seek to the start and return the same file, for a second pass."""
    archive.seek(0)
    return archive
