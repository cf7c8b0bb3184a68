"""The named failures of the environment pool."""

from __future__ import annotations


class PoolError(RuntimeError):
    """Something in the environment pool could not be done as asked."""


class StartError(PoolError):
    """A display, session or program did not start, or did not become ready in time."""


class UnknownEnvironment(PoolError, KeyError):
    """An action or observation named an environment the pool does not have."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown environment"


class StaleGeneration(PoolError):
    """An action aimed at a generation the environment has already left; never applied."""

    def __init__(self, env: str, aimed: int, current: int) -> None:
        self.env = env
        self.aimed = aimed
        self.current = current
        super().__init__(f"{env}: generation {aimed} is stale (current is {current})")


class CanaryIsReadOnly(PoolError):
    """An action was aimed at the canary, which never receives one."""


class BadAction(PoolError, ValueError):
    """An action or observation request is malformed (unknown kind, bad field)."""
