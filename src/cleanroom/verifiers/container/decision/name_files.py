"""The files that say what names resolve to in a container (``/etc/hosts``,
``/etc/resolv.conf``, ``/etc/hostname``), as the harness made them, and what the agent
changed of them.

Docker binds a container's own copies of these files into it, and a container that joins
another's network namespace (a ``live_processes`` verifier joining the agent's) gets that
container's copies: one line the agent adds to its hosts file would send a name the
tests ask for (their own reference service, a compose service) to a process of the
agent's. The live verifier therefore gets the harness's copies, taken before the agent
acted, bound read-only; what the agent changed of its own is evidence (`NameFileChange`),
for people: its changes reach no verifier, so no decision reads them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from cleanroom.core.observed_file import FileKind, ObservedFile

HOSTS = "/etc/hosts"
RESOLV_CONF = "/etc/resolv.conf"
HOSTNAME = "/etc/hostname"
NAME_FILE_PATHS = (HOSTS, RESOLV_CONF, HOSTNAME)
# Docker's copies are a few hundred bytes; a larger file is not one the harness made.
NAME_FILE_CAP = 64 << 10


class NameFilesUnreadable(Exception):
    """A name file of a container the harness just started is not a regular file under
    the cap: nothing of the agent's has run, so the runtime made it so."""


@dataclass(frozen=True)
class NameFiles:
    """The three name files of a container, by path, as the harness took them."""

    hosts: bytes
    resolv_conf: bytes
    hostname: bytes

    def by_path(self) -> dict[str, bytes]:
        return {HOSTS: self.hosts, RESOLV_CONF: self.resolv_conf, HOSTNAME: self.hostname}

    @classmethod
    def of(cls, observed: Mapping[str, ObservedFile]) -> NameFiles:
        """From the observations of a container nothing of the agent's has run in yet;
        `NameFilesUnreadable` when one is no regular file under the cap."""
        for path in NAME_FILE_PATHS:
            found = observed.get(path)
            if found is None or found.kind is not FileKind.REGULAR:
                kind = found.kind.value if found is not None else "not read"
                raise NameFilesUnreadable(f"{path} of a container just started is {kind}")
        return cls(observed[HOSTS].data, observed[RESOLV_CONF].data, observed[HOSTNAME].data)


@dataclass(frozen=True)
class NameFileChange:
    """One name file the agent left other than the harness made it: ``found`` is what is
    there now (``regular``, ``missing``, ``symlink``, ...), ``added`` the lines it holds
    that the harness's copy did not (for a regular file; the first few, shortened)."""

    path: str
    found: str
    added: tuple[str, ...] = ()

    def __str__(self) -> str:
        if self.found != FileKind.REGULAR.value:
            return f"{self.path} is now {self.found}"
        if self.added:
            return f"{self.path} changed, adding {', '.join(repr(a) for a in self.added)}"
        return f"{self.path} changed"


MAX_LINES_SHOWN = 5
LINE_CHARS = 120


def changes(made: NameFiles, now: Mapping[str, ObservedFile]) -> tuple[NameFileChange, ...]:
    """What the agent changed of the name files the harness made (``made``), from what
    is at their paths after the agent phase (``now``, observed without following links)."""
    found: list[NameFileChange] = []
    for path, before in made.by_path().items():
        after = now.get(path)
        if after is None:
            continue
        if after.kind is not FileKind.REGULAR:
            found.append(NameFileChange(path, after.kind.value))
        elif after.data != before:
            old = set(before.splitlines())
            added = [
                line.decode("utf-8", "replace")[:LINE_CHARS]
                for line in after.data.splitlines()
                if line not in old
            ]
            found.append(NameFileChange(path, after.kind.value, tuple(added[:MAX_LINES_SHOWN])))
    return tuple(found)
