"""What the agent changed, where no daemon keeps a diff: two listings of a filesystem, one
of the agent's environment and one of a fresh environment of the same image, compared.

A listing is the output of `LISTING_COMMAND` (GNU find's ``-printf``): one record a path,
each field ended by a NUL byte, so that a name with a newline, a tab or bytes that are not
UTF-8 is one name. The agent's listing is data from the agent: its own ``find`` may lie,
so what it says can only ever add evidence against the agent (a change it admits to);
the verification itself never rests on it (the tests run in a fresh environment).

`changes_between` gives the same `Change` records a Docker diff gives, so the tamper and
unseen-change rules read both alike. Folders are compared by kind, mode and owner only:
their size and time change whenever an entry is added beneath them, which the entry's own
record already says.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from cleanroom.verifiers.container.decision.tamper import Change, ChangeKind, Diff

# Fields per record: type, mode (octal), uid, gid, size, mtime (seconds), link target, path.
FIELDS = 8
# More entries than this and the listing is cut (what a cut listing misses is said).
MAX_ENTRIES = 500_000
# The trees never listed: the kernel's, and the device folder every engine makes anew.
PRUNED = ("/proc", "/sys", "/dev")
_FORMAT = r"%y\0%m\0%U\0%G\0%s\0%T@\0%l\0%p\0"


def listing_command(roots: Iterable[str] = ("/",), extra: Iterable[str] = ()) -> str:
    """A shell command that lists ``roots`` on their own filesystem, and ``extra`` (the
    verifier's places, which may be mounts of their own) whole, as NUL-ended records."""
    prune = " -o ".join(f"-path {shlex.quote(p)}" for p in PRUNED)
    lines = [
        f"find {' '.join(shlex.quote(r) for r in roots)} -xdev \\( {prune} \\) -prune "
        f"-o -printf {shlex.quote(_FORMAT)}"
    ]
    lines += [
        f"[ -e {shlex.quote(p)} ] && find {shlex.quote(p)} -printf {shlex.quote(_FORMAT)}"
        for p in extra
    ]
    return "; ".join(lines) + "; true"


LISTING_COMMAND = listing_command()


class ListingError(ValueError):
    """Bytes that are not a listing."""


@dataclass(frozen=True)
class Listed:
    """One path as a listing gives it."""

    kind: str  # find's %y: f, d, l, p, s, c, b
    mode: int
    uid: int
    gid: int
    size: int
    mtime: float
    target: str = ""

    def same_as(self, other: Listed) -> bool:
        """Whether ``other`` is this path unchanged (folders by kind, mode and owner)."""
        if (self.kind, self.mode, self.uid, self.gid) != (
            other.kind,
            other.mode,
            other.uid,
            other.gid,
        ):
            return False
        if self.kind == "d":
            return True
        return (self.size, self.mtime, self.target) == (other.size, other.mtime, other.target)


@dataclass(frozen=True)
class Listing:
    """A filesystem as listed: each path's record, and whether the listing was cut."""

    entries: Mapping[str, Listed]
    cut: bool = False


def parse_listing(data: bytes, max_entries: int = MAX_ENTRIES) -> Listing:
    """The records of `LISTING_COMMAND`'s output; `ListingError` for anything else."""
    fields = data.split(b"\0")
    if fields[-1] != b"":
        raise ListingError("the listing does not end with a whole record")
    fields.pop()
    if len(fields) % FIELDS:
        raise ListingError(f"the listing has {len(fields)} fields, not records of {FIELDS}")
    entries: dict[str, Listed] = {}
    for start in range(0, len(fields), FIELDS):
        if len(entries) >= max_entries:
            return Listing(entries, cut=True)
        kind, mode, uid, gid, size, mtime, target, path = fields[start : start + FIELDS]
        name = path.decode("utf-8", "surrogateescape")
        if not name.startswith("/"):
            raise ListingError(f"a listed path is not absolute: {name[:120]!r}")
        try:
            entries[_normal(name)] = Listed(
                kind.decode("ascii"),
                int(mode, 8),
                int(uid),
                int(gid),
                int(size),
                float(mtime),
                target.decode("utf-8", "surrogateescape"),
            )
        except (UnicodeDecodeError, ValueError) as exc:
            raise ListingError(f"a record of {name[:120]!r} is malformed: {exc}") from exc
    return Listing(entries)


def changes_between(pristine: Listing, after: Listing, source: str) -> Diff:
    """What ``after`` changed against ``pristine``, as a diff read from ``source``."""
    changes = [
        Change(path, ChangeKind.ADDED, entry.size if entry.kind == "f" else 0)
        for path, entry in after.entries.items()
        if path not in pristine.entries
    ]
    changes += [
        Change(path, ChangeKind.MODIFIED, entry.size if entry.kind == "f" else 0)
        for path, entry in after.entries.items()
        if path in pristine.entries and not pristine.entries[path].same_as(entry)
    ]
    # A listing that was cut cannot say what is missing from it.
    if not after.cut:
        changes += [
            Change(path, ChangeKind.DELETED)
            for path in pristine.entries
            if path not in after.entries
        ]
    cut = [name for name, listing in (("pristine", pristine), ("agent's", after)) if listing.cut]
    incomplete = f"the {' and '.join(cut)} listing was cut at {MAX_ENTRIES} entries" if cut else ""
    return Diff(sorted(changes), source, incomplete)


def _normal(path: str) -> str:
    # find prints a root's own record as given ("/"), its entries beneath it as "/x".
    return path if path == "/" else path.rstrip("/")
