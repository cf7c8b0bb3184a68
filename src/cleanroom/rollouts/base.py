"""What every smoke task provides: setup, a scripted policy, a do-nothing policy, a verifier."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cleanroom.core.outcomes import Outcome
from cleanroom.core.tokens import Token
from cleanroom.environments.policy.handle import PolicyHandle


class RolloutSetupError(RuntimeError):
    """The task could not be prepared in the environment; the rollout is invalid."""


@dataclass
class RolloutContext:
    """What a task sees: its token, its environment's handle, and harness services."""

    token: Token
    env: str
    handle: PolicyHandle
    run_dir: Path
    open_url: Callable[[str, str], None]  # (env, url): a harness setup step
    # The environment's home as it is now: a reset with warm standby moves it.
    home_of: Callable[[], Path]
    state: dict[str, Any] = field(default_factory=dict)
    # The environment's live description (user, home, display, session); None means
    # "ask the pool behind the run folder", which a harness with an in-process pool cannot.
    env_details: Callable[[str], dict[str, Any]] | None = None

    @property
    def home(self) -> Path:
        """The environment's home now (read again after every reset)."""
        return self.home_of()


class SmokeTask(ABC):
    """One smoke task."""

    name: str = ""

    def setup(self, ctx: RolloutContext) -> None:  # noqa: B027 - most tasks need none
        """Prepare the environment before the policy acts (harness side)."""

    @abstractmethod
    def policy(self, ctx: RolloutContext) -> None:
        """The scripted policy: acts only through ``ctx.handle``."""

    @abstractmethod
    def verify(self, ctx: RolloutContext) -> Outcome:
        """Decide the outcome from outside the environment."""

    def teardown(self, ctx: RolloutContext) -> None:  # noqa: B027 - most tasks need none
        """Release what setup acquired."""


def noop_policy(ctx: RolloutContext) -> None:
    """A policy that does nothing: every task must fail under it."""
