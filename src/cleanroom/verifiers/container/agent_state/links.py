"""Where the agent's links lead in the verifier's container.

A link the agent leaves in its state or its artifacts is carried to the verifier
unchanged. In the agent's container it may dangle; in the verifier's it resolves against
a root that holds the tests, the expected outputs, the reward folder and cleanroom's own
mounts. So every link is resolved the way the verifier's kernel would resolve it, in the
verifier's container once the state is installed: chains, relative and absolute targets,
links to folders, links through ``..``. A link whose path comes to rest in one of the
verifier's places, inside one, at a folder above one (``/``, ``/logs``: a route to it
through whatever the test names below the link), or passes through ``/proc`` or ``/sys``
(whose magic links lead anywhere) is the agent's tamper. Every other link is legal: a
venv's ``bin/python`` to the image's interpreter, links inside the work dir.

The resolution is pure: it asks ``lstat`` (one function of a path, given by the caller:
the installed archives' own members first, the verifier's container for the rest) what
is at each component, and never follows anything itself.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import Enum

from cleanroom.core.paths import under

# Linux's own limit on links followed in one lookup (ELOOP).
MAX_HOPS = 40
# Trees whose entries are the kernel's, not files: a link through them leads anywhere.
KERNEL_TREES = ("/proc", "/sys")


class EntryKind(Enum):
    """What one path is, as far as resolving needs to know."""

    MISSING = "missing"
    LINK = "link"
    FOLDER = "folder"
    OTHER = "other"  # a file, a FIFO, anything that is not a folder: nothing lies below it


@dataclass(frozen=True)
class Entry:
    """One path's kind, and a link's target."""

    kind: EntryKind
    target: str = ""


@dataclass(frozen=True)
class Resolution:
    """Where one link comes to rest, and the verifier's place it reached (``""``: none)."""

    link: str
    resolved: str
    place: str = ""

    def __str__(self) -> str:
        return f"{self.link} resolves to {self.resolved} ({self._why})"

    @property
    def _why(self) -> str:
        if self.place in KERNEL_TREES:
            return f"through {self.place}"
        if self.resolved == self.place or under(self.resolved, self.place):
            return f"the verifier's {self.place}"
        return f"a folder above the verifier's {self.place}"


def resolve(path: str, lstat: Callable[[str], Entry], places: Sequence[str]) -> Resolution:
    """Resolve ``path`` (absolute) as the kernel would, link by link, stopping at the
    first component that enters one of ``places`` or a kernel tree; what is missing is
    taken as it reads, as ``realpath -m`` does."""
    guarded = tuple(posixpath.normpath(p) for p in (*places, *KERNEL_TREES))
    pending = _parts(path)
    resolved = "/"
    hops = 0
    missing = False
    while pending:
        name = pending.pop()
        if name == ".":
            continue
        if name == "..":
            resolved = posixpath.dirname(resolved)
            continue
        candidate = posixpath.join(resolved, name)
        entered = next((p for p in guarded if under(candidate, p)), "")
        if entered:
            return Resolution(path, posixpath.join(candidate, *reversed(pending)), entered)
        entry = Entry(EntryKind.MISSING) if missing else lstat(candidate)
        if entry.kind is EntryKind.LINK:
            hops += 1
            if hops > MAX_HOPS:
                return Resolution(path, candidate)  # ELOOP: it opens nothing at all
            if entry.target.startswith("/"):
                resolved = "/"
            pending.extend(_parts(entry.target))
            continue
        if entry.kind is EntryKind.MISSING or (entry.kind is EntryKind.OTHER and pending):
            missing = True  # nothing below is on disk: the rest reads as it is written
        resolved = candidate
    above = next((p for p in guarded if p not in KERNEL_TREES and under(p, resolved)), "")
    return Resolution(path, resolved, above)


def into_places(
    links: Iterable[str], lstat: Callable[[str], Entry], places: Sequence[str]
) -> list[Resolution]:
    """The links among ``links`` that resolve into, through or above the verifier's
    ``places``, in order; ``lstat`` answers each path once however many links ask."""
    seen: dict[str, Entry] = {}

    def cached(p: str) -> Entry:
        if p not in seen:
            seen[p] = lstat(p)
        return seen[p]

    found = []
    for link in links:
        resolution = resolve(link, cached, places)
        if resolution.place:
            found.append(resolution)
    return found


def _parts(path: str) -> list[str]:
    """The components of ``path`` in reverse, for popping off the end."""
    return [p for p in reversed(path.split("/")) if p]
