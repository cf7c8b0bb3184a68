"""The three verifier modes, as data: what each one does before and around test.sh.

- ``shared``: test.sh runs in the live agent container and whatever reward is there is
  read. The naive baseline many harnesses ship; kept only as the red team's positive
  control, never the default.
- ``cleared``: ``shared`` plus the reviewed fix: after the setup commands and right before
  test.sh, the reward file(s) alone are removed as uid 0 from ``/``, failing loudly.
  Known limit: a process the agent left running can still write the reward.
- ``sealed`` (default): the agent container is frozen, its diff classified for tampering
  and snapshotted; test.sh runs in a fresh container from the snapshot with a fresh
  ``/tests``, a fresh host folder for the reward, no network (or only the agent
  container's localhost for ``live_processes`` tasks), and the reward is read on the host.
  Known limit: code that test.sh itself chooses to run from the agent's workspace (the
  module under test, imported by pytest) runs with the verifier's rights and could write
  the reward directly; sealed removes every route around test.sh, not trust in what
  test.sh executes. For ``live_processes`` tasks the agent's processes keep running
  (in their own container, sharing only the network namespace).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Mode(StrEnum):
    """How test.sh is isolated from what the agent left behind."""

    SHARED = "shared"
    CLEARED = "cleared"
    SEALED = "sealed"


DEFAULT_MODE = Mode.SEALED


@dataclass(frozen=True)
class ModePlan:
    """The steps a mode takes; `verify` follows it and nothing else differs between modes."""

    in_agent_container: bool  # test.sh runs in the live agent container
    clears_reward: bool  # the reward files are removed as uid 0 right before test.sh
    freezes_agent: bool  # the agent container is paused and snapshotted
    checks_tamper: bool  # the agent phase's diff is classified for protected writes
    fresh_tests: bool  # /tests is created fresh rather than merged into what is there
    reward_on_host: bool  # the reward is read from a host folder only the verifier had

    @property
    def positive_control(self) -> bool:
        """Whether this mode exists only to show that an attack is real."""
        return not (self.clears_reward or self.freezes_agent)


_PLANS = {
    Mode.SHARED: ModePlan(True, False, False, False, False, False),
    Mode.CLEARED: ModePlan(True, True, False, False, False, False),
    Mode.SEALED: ModePlan(False, False, True, True, True, True),
}


def plan(mode: Mode) -> ModePlan:
    """The plan for ``mode``."""
    return _PLANS[mode]
