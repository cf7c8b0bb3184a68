"""Where the agent's links lead in the verifier's container, and what becomes of them.

A link the agent leaves in its state or its artifacts is carried to the verifier. In the
agent's container it may dangle; in the verifier's it resolves against a root that holds
the tests, the expected outputs, the reward folder, cleanroom's own mounts, and whatever
test.sh writes while it runs. So every link is resolved the way the verifier's kernel
would resolve it, in the verifier's container before the state is installed: chains,
relative and absolute targets, links to folders, links through ``..``.

- A link whose path comes to rest in one of the verifier's places, inside one, at a folder
  above one (``/``, ``/logs``: a route to it through whatever the test names below the
  link), or passes through ``/proc`` or ``/sys`` (whose magic links lead anywhere) is the
  agent's tamper.
- A link that comes to rest on something of the state's stays as it is: links inside the
  work dir, ``lib64 -> lib``.
- Every other link would lead the verifier to something the agent did not leave, and
  whose content test.sh may change before it follows the link: a dangling link's target
  is a place test.sh can write its own scratch answer into, and an image file or folder
  outside the state one it can overwrite. Such a link is *frozen* (`judge`): one that
  dangles is pointed at `NOWHERE`, where nothing can ever be made, and one that rests on
  a file or folder of the image becomes a copy of it, taken from the pristine image at
  install (a venv's ``bin/python`` becomes the interpreter itself, as ``venv --copies``
  makes it). A link of the chain that is itself frozen decides for the links that lead
  through it, so only the last link of the state in each chain changes.

The resolution is pure: it asks ``lstat`` (the installed archives' own members first, the
verifier's container for the rest) what is at each component, and never follows anything
itself. `resolve_all` resolves many links in rounds, asking for every path the round
needs at once, so a state of many links costs a few calls on the container, not one per
link.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum

from cleanroom.core.paths import under, under_any

# Linux's own limit on links followed in one lookup (ELOOP).
MAX_HOPS = 40
# Trees whose entries are the kernel's, not files: a link through them leads anywhere.
KERNEL_TREES = ("/proc", "/sys")
# Where a frozen dangling link points: a name under cleanroom's read-only mount that does
# not exist, so nothing can be read there and nothing made (EROFS).
NOWHERE = "/run/cleanroom/python/.frozen-dangling-link"
# Device nodes hold nothing test.sh could write for a link to show: links to them stay.
_DEVICES = "/dev"


class EntryKind(Enum):
    """What one path is, as far as resolving needs to know."""

    MISSING = "missing"
    LINK = "link"
    FOLDER = "folder"
    FILE = "file"  # a regular file: nothing lies below it
    OTHER = "other"  # a FIFO, a socket, a device: nothing lies below it either


@dataclass(frozen=True)
class Entry:
    """One path's kind, and a link's target."""

    kind: EntryKind
    target: str = ""


@dataclass(frozen=True)
class Resolution:
    """Where one link comes to rest, and the verifier's place it reached (``""``: none).

    ``kind`` is what lies there (`EntryKind.MISSING` when the link dangles: a component on
    the way is missing, or the chain is too long); ``missing_from`` the first path found
    missing (``""`` when none was); ``through`` the links followed, in order, the link
    itself first."""

    link: str
    resolved: str
    place: str = ""
    kind: EntryKind = EntryKind.MISSING
    missing_from: str = ""
    through: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"{self.link} resolves to {self.resolved} ({self._why})"

    @property
    def _why(self) -> str:
        if self.place in KERNEL_TREES:
            return f"through {self.place}"
        if self.resolved == self.place or under(self.resolved, self.place):
            return f"the verifier's {self.place}"
        return f"a folder above the verifier's {self.place}"


@dataclass(frozen=True)
class LinkJudgement:
    """What becomes of the links of the agent's state in the verifier's container.

    ``tamper``: links into the verifier's places; ``dangling``: links frozen to
    `NOWHERE`; ``outside``: links frozen to a copy of the image's file or folder they
    rest on. Every other link stays as the agent left it."""

    tamper: list[Resolution] = field(default_factory=list)
    dangling: list[Resolution] = field(default_factory=list)
    outside: list[Resolution] = field(default_factory=list)


def resolve(path: str, lstat: Callable[[str], Entry], places: Sequence[str]) -> Resolution:
    """Resolve ``path`` (absolute) as the kernel would, link by link, stopping at the
    first component that enters one of ``places`` or a kernel tree; what is missing is
    taken as it reads, as ``realpath -m`` does."""
    walk = _walk(path, places)
    try:
        asked = next(walk)
        while True:
            asked = walk.send(lstat(asked))
    except StopIteration as done:
        resolution: Resolution = done.value
        return resolution


def resolve_all(
    paths: Iterable[str],
    lstat_many: Callable[[list[str]], Mapping[str, Entry]],
    places: Sequence[str],
) -> dict[str, Resolution]:
    """Resolve every path of ``paths`` (as `resolve`), in rounds: each round asks
    ``lstat_many`` once for every path the unfinished resolutions need and it has not
    answered yet. A path it leaves out of its answer is missing."""
    known: dict[str, Entry] = {}
    done: dict[str, Resolution] = {}
    waiting: dict[str, tuple[Generator[str, Entry, Resolution], str]] = {}

    def advance(path: str, walk: Generator[str, Entry, Resolution], entry: Entry | None) -> None:
        try:
            asked = next(walk) if entry is None else walk.send(entry)
            while asked in known:
                asked = walk.send(known[asked])
        except StopIteration as finished:
            done[path] = finished.value
            return
        waiting[path] = (walk, asked)

    for path in paths:
        if path not in done and path not in waiting:
            advance(path, _walk(path, places), None)
    while waiting:
        asked_now = sorted({asked for _, asked in waiting.values()})
        answers = lstat_many(asked_now)
        for asked in asked_now:
            known[asked] = answers.get(asked, Entry(EntryKind.MISSING))
        for path, (walk, asked) in list(waiting.items()):
            del waiting[path]
            advance(path, walk, known[asked])
    return done


def judge(
    links: Iterable[str],
    lstat_many: Callable[[list[str]], Mapping[str, Entry]],
    places: Sequence[str],
    state: Sequence[str],
) -> LinkJudgement:
    """What becomes of each of ``links`` (the state's links, under the ``state`` paths):
    see the module's description."""
    judgement = LinkJudgement()
    for link, r in sorted(resolve_all(links, lstat_many, places).items()):
        if r.place:
            judgement.tamper.append(r)
            continue
        if link not in r.through:
            # Never reached (a folder above it missing): nothing shows where it leads, so
            # it leads nowhere.
            judgement.dangling.append(Resolution(link, NOWHERE))
            continue
        # Only the last link of the state in the chain is frozen: the others then lead to
        # what replaces it, which is the state's.
        if [hop for hop in r.through if under_any(hop, state)][-1:] != [link]:
            continue
        if r.kind is EntryKind.MISSING:
            judgement.dangling.append(r)
        elif under_any(r.resolved, state):
            continue
        elif r.kind in (EntryKind.FOLDER, EntryKind.FILE):
            judgement.outside.append(r)
        elif not (r.resolved == _DEVICES or under(r.resolved, _DEVICES)):
            judgement.outside.append(r)  # a FIFO or socket of the image's: refused
    return judgement


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


def _walk(path: str, places: Sequence[str]) -> Generator[str, Entry, Resolution]:
    """`resolve` as a generator: it yields each path it needs the entry of and is sent
    the entry."""
    guarded = tuple(posixpath.normpath(p) for p in (*places, *KERNEL_TREES))
    pending = _parts(path)
    resolved = "/"
    kind = EntryKind.FOLDER
    hops = 0
    missing_from = ""
    through: list[str] = []
    while pending:
        name = pending.pop()
        if name == ".":
            continue
        if name == "..":
            resolved = posixpath.dirname(resolved)
            kind = EntryKind.FOLDER
            continue
        candidate = posixpath.join(resolved, name)
        entered = next((p for p in guarded if under(candidate, p)), "")
        if entered:
            rest = posixpath.join(candidate, *reversed(pending))
            return Resolution(path, rest, entered, through=tuple(through))
        entry = Entry(EntryKind.MISSING) if missing_from else (yield candidate)
        if entry.kind is EntryKind.LINK:
            hops += 1
            through.append(candidate)
            if hops > MAX_HOPS:  # ELOOP: it opens nothing at all
                return Resolution(path, candidate, missing_from=candidate, through=tuple(through))
            if entry.target.startswith("/"):
                resolved = "/"
            pending.extend(_parts(entry.target))
            continue
        if not missing_from and (
            entry.kind is EntryKind.MISSING
            or (entry.kind in (EntryKind.FILE, EntryKind.OTHER) and pending)
        ):
            # Nothing below is on disk: the rest reads as it is written.
            missing_from = candidate
        resolved = candidate
        kind = entry.kind
    above = next((p for p in guarded if p not in KERNEL_TREES and under(p, resolved)), "")
    return Resolution(
        path,
        resolved,
        above,
        EntryKind.MISSING if missing_from else kind,
        missing_from,
        tuple(through),
    )


def _parts(path: str) -> list[str]:
    """The components of ``path`` in reverse, for popping off the end."""
    return [p for p in reversed(path.split("/")) if p]
