"""The guest interface: the one narrow door through which verifiers touch an environment.

A guest runs commands and moves files in some machine the verifier does not live in: a
local user account, a Docker container, later a desktop environment. Verifiers see only
this interface, so a new kind of environment is a new adapter, never a change to them.
"""

from __future__ import annotations

import posixpath
import shlex
from abc import ABC, abstractmethod
from types import TracebackType
from typing import Any

from cleanroom.exec_result import ExecResult

Command = str | list[str]


class GuestError(Exception):
    """The guest could not be reached or used: daemon down, container gone, no permission."""


class GuestTimeout(GuestError):
    """A command ran past its time limit; the guest killed it."""

    def __init__(self, command: Command, timeout: float) -> None:
        self.command = command
        self.timeout = timeout
        super().__init__(f"command ran past its {timeout:g} s limit and was killed: {command!r}")


class CommandNotStarted(GuestError):
    """The guest could not start the program at all (not found, not executable)."""

    def __init__(self, command: Command, why: str) -> None:
        self.command = command
        self.why = why
        super().__init__(f"could not start {command!r}: {why}")


class UnknownGuestKind(ValueError):
    """A guest spec names a kind of guest that does not exist."""


def to_argv(command: Command, *, shell: bool) -> list[str]:
    """The argv a POSIX ``subprocess`` call would run for ``command``.

    With ``shell`` a string becomes ``/bin/sh -c STRING`` and a list becomes
    ``/bin/sh -c FIRST REST...`` (what Popen does with ``shell=True``); without it a
    string is split shell-style and a list is used as it is.
    """
    if shell:
        if isinstance(command, str):
            return ["/bin/sh", "-c", command]
        return ["/bin/sh", "-c", *command]
    if isinstance(command, str):
        return shlex.split(command)
    return list(command)


def resolve_path(path: str, home: str) -> str:
    """An absolute guest path: ``~`` and ``~/x`` resolve to the home, relative paths too."""
    if path == "~":
        return home
    if path.startswith("~/"):
        return posixpath.join(home, path[2:])
    return posixpath.normpath(posixpath.join(home, path))


class Guest(ABC):
    """One environment a verifier can act in.

    Commands run as the guest's user with the home as working directory, the way a login
    shell of that user would see them. Implementations raise `GuestError` (or a subclass)
    for every failure of the guest itself, never for a command that merely exits non-zero.
    """

    #: The spec prefix that opens this kind of guest, such as ``local`` or ``docker``.
    kind: str = ""
    #: Whether commands run in a desktop session (a display with the task's windows), so
    #: steps that act on windows can run.
    has_desktop: bool = False

    @property
    @abstractmethod
    def home(self) -> str:
        """The user's home directory inside the guest; commands start there."""

    @abstractmethod
    def exec(
        self, command: Command, *, shell: bool, timeout: float, user: str | None = None
    ) -> ExecResult:
        """Run a command to completion and return what it produced.

        Raises `GuestTimeout` after ``timeout`` seconds (the command and its children are
        killed), `CommandNotStarted` when the program cannot be started, `GuestError`
        when the guest itself fails.
        """

    @abstractmethod
    def spawn(self, command: Command, *, shell: bool, user: str | None = None) -> None:
        """Start a command and return at once, without waiting for it (fire and forget)."""

    @abstractmethod
    def read_file(self, path: str) -> bytes:
        """The bytes of a guest file; `FileNotFoundError` when it does not exist, and
        `host_files.NotARegularFile` when it is no regular file or is over the read cap."""

    @abstractmethod
    def write_file(self, path: str, data: bytes) -> None:
        """Write a guest file, creating parent folders, owned by the guest's user."""

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """A JSON-ready description of the guest, for reports and outcome details."""

    @abstractmethod
    def fresh(self) -> Guest:
        """A new guest of the same kind in a clean state; the caller closes it."""

    def close(self) -> None:  # noqa: B027 - most guests have nothing to release
        """Release what the guest owns (temporary homes, containers, spawned processes)."""

    def __enter__(self) -> Guest:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
