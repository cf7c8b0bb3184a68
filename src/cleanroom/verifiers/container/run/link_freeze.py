"""The agent's links judged and frozen in the verifier's container, before the state is
installed (`links` says what becomes of each link and why).

The links come from the state's and the artifacts' archives; each archive answers for its
own paths, and the verifier's container (its pristine image, the state paths cleared)
for the rest, in bulk (`Files.entries`: a few calls however many links). A link frozen
to a copy gets the file or folder it rested on, taken out of the same container through
the runtime's archive call, within `FROZEN_CAP_BYTES` all told. The archives are then
rewritten with the frozen links in place, so what is installed is exactly what the
verifier may follow.

Cost is bounded before any per-link work: a state of more than `MAX_LINKS` links is the
agent's 0 (`workspace_broken`).
"""

from __future__ import annotations

import posixpath
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO

from cleanroom.core.outcomes import Reason
from cleanroom.core.paths import under, under_any
from cleanroom.verifiers.container.agent_state import links, state_archive
from cleanroom.verifiers.container.agent_state.links import Entry, EntryKind, Resolution
from cleanroom.verifiers.container.agent_state.state_archive import FrozenLink
from cleanroom.verifiers.container.decision.verdict import AgentFault
from cleanroom.verifiers.container.runtime import RuntimeUnavailable, StateCopy
from cleanroom.verifiers.container.runtime.interface import VerificationRuntime
from cleanroom.verifiers.container.runtime.records import StateTooLarge

MAX_LINKS = 20_000
FROZEN_CAP_BYTES = 256 << 20
MAX_FROZEN = 256  # distinct files and folders copied for links that rest on them


@dataclass
class FrozenLinks:
    """What judging the links found: the agent's tamper (links into the verifier's
    places, or that could not be frozen), and the counts, for the outcome's details."""

    tamper: list[str] = field(default_factory=list)
    links: int = 0
    dangling: int = 0
    copied: int = 0

    def details(self) -> dict[str, int]:
        return {
            "resolved": self.links,
            "frozen_dangling": self.dangling,
            "frozen_copies": self.copied,
        }


def too_many_links(copies: Sequence[StateCopy]) -> AgentFault | None:
    """The agent's fault when its state holds more links than are judged."""
    count = sum(1 for c in copies for e in c.tree.values() if e.kind is EntryKind.LINK)
    if count <= MAX_LINKS:
        return None
    return AgentFault(
        Reason.WORKSPACE_BROKEN,
        f"the agent's state holds {count} symbolic links; at most {MAX_LINKS} are carried "
        "to the verifier",
    )


def judge_and_freeze(
    rt: VerificationRuntime, vctr: str, copies: list[StateCopy], places: Sequence[str]
) -> FrozenLinks:
    """Judge every link of ``copies`` (in install order) in ``vctr``, the verifier's
    container with its state paths cleared; rewrite the copies' archives with the frozen
    links in place. Links into ``places`` come back as tamper, and nothing is rewritten."""
    tree: dict[str, Entry] = {}
    roots: list[str] = []
    for copy in copies:  # in install order: a later copy replaces what it covers
        tree = {p: e for p, e in tree.items() if not under(p, copy.path)}
        tree.update(copy.installed())
        roots.append(copy.path)

    # The folders above the state's paths: the install makes those the image lacks (a
    # separate verifier's image may have no work dir at all).
    above = {a for r in roots for a in _ancestors(r)}

    def lstat_many(paths: list[str]) -> Mapping[str, Entry]:
        found = {p: tree[p] for p in paths if p in tree}
        # What an archive does not hold under its path is a file or nothing: either
        # stops a resolution, and `_files_in_state` tells the two apart at a link's end.
        asked = [p for p in paths if p not in tree and not under_any(p, roots)]
        if asked:
            found.update(rt.files.entries(vctr, asked))
        for p in asked:
            if p in above and found.get(p, _MISSING).kind is EntryKind.MISSING:
                found[p] = Entry(EntryKind.FOLDER)
        return found

    found = [p for p, e in tree.items() if e.kind is EntryKind.LINK]
    result = FrozenLinks(links=len(found))
    judgement = links.judge(found, lstat_many, places, roots)
    if judgement.tamper:
        result.tamper = [str(r) for r in judgement.tamper]
        return result
    ends = _files_in_state(copies, [r.resolved for r in judgement.dangling if _ends_in(r, roots)])
    dangling = [r for r in judgement.dangling if r.resolved not in ends]
    frozen: dict[str, FrozenLink] = {r.link: FrozenLink(target=links.NOWHERE) for r in dangling}
    taken: list[StateCopy] = []
    try:
        copied, refused = _copies_of(rt, vctr, judgement.outside, taken)
        result.tamper = refused
        if refused:
            return result
        frozen.update(copied)
        _rewrite(copies, frozen)
    finally:
        for copy in taken:
            copy.close()
    result.dangling = len(dangling)
    result.copied = len(copied)
    return result


_MISSING = Entry(EntryKind.MISSING)


def _ancestors(path: str) -> list[str]:
    """The folders above ``path`` (absolute), ``/`` left out."""
    found = []
    while (path := posixpath.dirname(path)) not in ("/", ""):
        found.append(path)
    return found


def _ends_in(r: Resolution, roots: Sequence[str]) -> bool:
    """Whether ``r`` dangles only for want of its last name, inside the state: a file
    there is left out of the archives' trees."""
    return r.missing_from == r.resolved and under_any(r.resolved, roots)


def _files_in_state(copies: Sequence[StateCopy], paths: Sequence[str]) -> set[str]:
    """The ``paths`` that name a file (or FIFO) of the state: one pass over each archive
    they lie in."""
    found: set[str] = set()
    for copy in copies:
        if copy.archive is None:
            continue
        parent = posixpath.dirname(copy.path) or "/"
        mine = {
            posixpath.relpath(p, parent) for p in paths if under(p, copy.path) or p == copy.path
        }
        if mine:
            names = state_archive.files_named(state_archive.rewind(copy.archive), mine)
            found.update(posixpath.join(parent, n) for n in names)
    return found


def _copies_of(
    rt: VerificationRuntime, vctr: str, outside: Sequence[Resolution], taken: list[StateCopy]
) -> tuple[dict[str, FrozenLink], list[str]]:
    """Each link of ``outside`` frozen to a copy of what it rests on, taken from ``vctr``
    (the copies are appended to ``taken``, for the caller to close); and the links that
    could not be frozen, as tamper lines."""
    by_target: dict[str, StateCopy] = {}
    frozen: dict[str, FrozenLink] = {}
    refused: list[str] = []
    left = FROZEN_CAP_BYTES
    for r in outside:
        copy = by_target.get(r.resolved)
        if copy is None:
            why = ""
            if len(by_target) >= MAX_FROZEN:
                why = f"more than {MAX_FROZEN} files and folders outside the state"
            elif r.kind not in (EntryKind.FOLDER, EntryKind.FILE):
                why = "it is neither a file nor a folder"
            else:
                try:
                    copy = rt.state.export(vctr, r.resolved, left)
                except StateTooLarge:
                    why = f"what it leads to is over {FROZEN_CAP_BYTES >> 20} MiB all told"
                except state_archive.StateArchiveError as exc:
                    why = str(exc)
                except RuntimeUnavailable as exc:
                    if exc.status is None:
                        raise
                    why = str(exc)
            if copy is None:
                refused.append(
                    f"{r.link} resolves to {r.resolved}, outside the state, which "
                    f"could not be frozen: {why}"[:500]
                )
                continue
            taken.append(copy)
            by_target[r.resolved] = copy
            left -= _size(copy.archive)
        if copy.archive is None:  # gone since it was looked at: nothing to follow
            frozen[r.link] = FrozenLink(target=links.NOWHERE)
        else:
            top = posixpath.basename(r.resolved.rstrip("/")) or "/"
            frozen[r.link] = FrozenLink(copy=copy.archive, top=top)
    return frozen, refused


def _rewrite(copies: Sequence[StateCopy], frozen: Mapping[str, FrozenLink]) -> None:
    """Each copy holding a link of ``frozen`` rewritten with it replaced."""
    for copy in copies:
        if copy.archive is None:
            continue
        parent = posixpath.dirname(copy.path) or "/"
        mine = {
            posixpath.relpath(link, parent): how
            for link, how in frozen.items()
            if under(link, copy.path) or link == copy.path
        }
        if not mine:
            continue
        out: IO[bytes] = tempfile.TemporaryFile(prefix="cleanroom-state-")  # noqa: SIM115
        try:
            state_archive.with_frozen(state_archive.rewind(copy.archive), out, mine)
        except BaseException:
            out.close()
            raise
        copy.archive.close()
        copy.archive = out
        for name in mine:
            copy.tree.pop(name, None)


def _size(archive: IO[bytes] | None) -> int:
    if archive is None:
        return 0
    archive.seek(0, 2)
    return archive.tell()
