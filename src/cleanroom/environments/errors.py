"""The named failures of the environment pool."""

from __future__ import annotations

from cleanroom.core.breakage import Breakage


class PoolError(RuntimeError):
    """Something in the environment pool could not be done as asked."""


class StartError(PoolError):
    """A display, session or program did not start, or did not become ready in time."""


class UnknownEnvironment(PoolError, KeyError):
    """An action or observation named an environment the pool does not have."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown environment"


class StaleGeneration(PoolError):
    """An action aimed at a generation the environment has already left; never applied.

    ``left_by`` is who broke that generation when a recovery is what left it (None: a
    reset, which breaks nothing)."""

    def __init__(self, env: str, aimed: int, current: int, left_by: Breakage | None = None) -> None:
        self.env = env
        self.aimed = aimed
        self.current = current
        self.left_by = left_by
        why = f"; it was left because {left_by.why} ({left_by.cause})" if left_by else ""
        super().__init__(f"{env}: generation {aimed} is stale (current is {current}){why}")


class EnvironmentBroken(PoolError):
    """An action or observation failed because part of the environment is dead; the
    record says who broke it."""

    def __init__(self, env: str, generation: int, breakage: Breakage) -> None:
        self.env = env
        self.generation = generation
        self.breakage = breakage
        super().__init__(
            f"{env}: generation {generation} is broken ({breakage.cause}): {breakage.why}"
        )


class SelectionUnanswered(PoolError):
    """A selection of the environment is owned by one of its own programs (not by the
    harness), which did not answer a read in time: the environment's own act, where
    anything else that keeps a selection from being read is the infrastructure's."""

    def __init__(self, env: str, selection: str, owner: int) -> None:
        self.env = env
        self.selection = selection
        self.owner = owner
        super().__init__(f"{env}: the owner of {selection} (window {owner:#x}) did not answer")


class DisplayHeld(PoolError):
    """The environment's display server held the harness's request unanswered while idle:
    a client of the display holds a server grab. The harness never grabs a server and
    only the environment's programs reach its display, so this is the environment's own
    act, whatever the harness was doing (a screenshot, input, a window list, a tree).

    ``doing`` is what went unanswered; ``server_pid`` and ``unread`` are the evidence: the
    server's pid and how many of the harness's bytes it left unread while idle."""

    def __init__(
        self, env: str, doing: str, server_pid: int | None = None, unread: int | None = None
    ) -> None:
        self.env = env
        self.doing = doing
        self.server_pid = server_pid
        self.unread = unread
        PoolError.__init__(
            self,
            f"{env}: a client of its display holds a server grab ({doing} went unanswered; "
            f"the server, pid {server_pid}, left {unread} bytes of it unread while idle)",
        )


class SelectionHeld(DisplayHeld, SelectionUnanswered):
    """A selection read that a server grab held unanswered: a held display (the
    environment's own act) that every handler of a mute selection owner handles too
    (``owner`` is 0: a grab names no window)."""

    def __init__(
        self, env: str, selection: str, server_pid: int | None = None, unread: int | None = None
    ) -> None:
        DisplayHeld.__init__(self, env, f"a read of {selection}", server_pid, unread)
        self.selection = selection
        self.owner = 0


class CanaryIsReadOnly(PoolError):
    """An action was aimed at the canary, which never receives one."""


class BadAction(PoolError, ValueError):
    """An action or observation request is malformed (unknown kind, bad field)."""


class NoSuchWindow(BadAction):
    """An action named a program whose window the environment does not show."""
