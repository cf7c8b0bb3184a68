"""Tamper classification: which of the agent's filesystem writes could steer the verifier.

In sealed mode test.sh runs in a snapshot of what the agent left, so anything the agent
changed in the toolchain the verifier executes (interpreters, shells, ``pytest``,
``curl``, the dynamic loader, Python's start-up hooks, pytest configuration above
``/tests``) runs with the verifier's authority. Those writes make the rollout `invalid`
(`tamper`). Writes to the agent's own workspace are the work being graded and are not
classified.

A ``C`` entry that is the parent of another entry is the copy-up of a folder on the way
to a deeper change (overlayfs copies every parent up), not a change of its own; every
other entry counts, including deletions and metadata-only changes.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum


class ChangeKind(StrEnum):
    """``docker diff`` kinds."""

    MODIFIED = "C"
    ADDED = "A"
    DELETED = "D"

    @classmethod
    def from_docker(cls, code: int) -> ChangeKind:
        """The Engine API's 0/1/2 code as a kind."""
        return (cls.MODIFIED, cls.ADDED, cls.DELETED)[code]


@dataclass(frozen=True, order=True)
class Change:
    """One entry of a container's filesystem diff."""

    path: str
    kind: ChangeKind

    def __str__(self) -> str:
        return f"{self.kind.value} {self.path}"


# The toolchain and everything the verifier's programs read before the task's code runs.
PROTECTED_TREES: tuple[str, ...] = (
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/tests",
    "/logs",
    "/etc/ld.so.preload",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/ld.so.cache",
    "/etc/alternatives",
    "/etc/passwd",
    "/etc/group",
    "/etc/shadow",
    "/etc/gshadow",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/environment",
    "/etc/profile",
    "/etc/profile.d",
    "/etc/bash.bashrc",
    "/root/.local",
    "/root/.curlrc",
    # pytest walks up from /tests for configuration and conftest.py files.
    "/conftest.py",
    "/pytest.ini",
    "/pyproject.toml",
    "/tox.ini",
    "/setup.cfg",
)
# Python's start-up hooks wherever they are, and any installed package or .pth file.
PROTECTED_PATTERNS: tuple[str, ...] = (
    "/etc/python3*",
    "/etc/python3*/*",
    "*/site-packages",
    "*/site-packages/*",
    "*/dist-packages",
    "*/dist-packages/*",
    "*/sitecustomize.py",
    "*/usercustomize.py",
)


@dataclass(frozen=True)
class TamperReport:
    """The writes that count as tampering, and how many changes were looked at."""

    protected: tuple[Change, ...]
    considered: int

    @property
    def tampered(self) -> bool:
        return bool(self.protected)

    @property
    def paths(self) -> list[str]:
        """``"A /usr/local/bin/pytest"``-style lines, sorted, for details and reports."""
        return [str(c) for c in self.protected]


def classify(
    changes: Iterable[Change],
    *,
    baseline: Iterable[Change] = (),
    allow: Iterable[str] = (),
) -> TamperReport:
    """Classify the agent phase's changes.

    ``baseline`` is what the harness itself changed before the agent started (mount
    points it created); ``allow`` lists trees the task author vouches the agent may
    write (``[verifier] tamper_allow``).
    """
    before = set(baseline)
    allowed = tuple(allow)
    entries = sorted(set(changes) - before)
    parents = {_parent(c.path) for c in entries}
    counted = [
        c
        for c in entries
        if not (c.kind is ChangeKind.MODIFIED and c.path in parents)
        and not any(_under(c.path, tree) for tree in allowed)
    ]
    return TamperReport(tuple(c for c in counted if is_protected(c.path)), len(counted))


def is_protected(path: str) -> bool:
    """Whether a write at ``path`` could change what the verifier executes."""
    if any(_under(path, tree) for tree in PROTECTED_TREES):
        return True
    return any(fnmatch.fnmatchcase(path, pattern) for pattern in PROTECTED_PATTERNS)


def _under(path: str, tree: str) -> bool:
    return path == tree or path.startswith(tree.rstrip("/") + "/")


def _parent(path: str) -> str:
    head = path.rsplit("/", 1)[0]
    return head or "/"
