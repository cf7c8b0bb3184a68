"""The three verifier modes, as data: what each one does before and around test.sh.

- ``shared``: test.sh runs in the live agent container and whatever reward is there is
  read (through the Docker archive API, as Harbor reads it from its host mount). The
  naive baseline many harnesses ship; kept only as the red team's demonstrating mode,
  never the default. Its demonstration of a trojaned reader reads it with the
  container's own ``sh``, ``stat`` and ``head`` instead (`VerifyOptions.in_container_reader`).
- ``cleared``: ``shared`` plus the reviewed fix: after the setup commands and right before
  test.sh, the reward file(s) alone are removed as uid 0 from ``/``, failing loudly. That
  they are gone, that the work dir is a folder, and the reward itself are looked at
  through the Docker archive API, so no program of the container's answers for them (an
  agent can replace ``rm``, ``test`` or ``head``). Known limit: a process the agent left
  running can still write the reward once test.sh runs.
- ``sealed`` (default): the agent container is frozen and its state paths (the work dir,
  what ``[verifier] state`` names, top-level folders the agent created) and its artifacts
  (``/logs/artifacts`` and the task's ``artifacts``, by stricter rules) are taken out;
  test.sh runs in a fresh container from the *pristine* task image with that state
  installed, a fresh ``/tests``, a fresh host folder for the reward, no network (or
  only the agent container's localhost for ``live_processes`` tasks; the task's compose
  services, as the agent left them, on their internal network), and the reward is read
  on the host. The
  verifier's toolchain (loader, libc and its NSS modules, shells, interpreters and their
  start-up files, the test runner and its plugins, setup scripts) is the image's own, so
  nothing the agent wrote outside its state runs; inside its state, Python finds nothing
  of the agent's ahead of the image's own modules. Known limit: code that test.sh itself
  chooses to run from the agent's state (the module under test, a program the task
  declares as state) runs with the verifier's rights.

A task with a separate verifier environment (Harbor's ``environment_mode = "separate"``)
is verified the sealed way in every mode, in a container of the verifier's own image with
the artifacts alone: the task chose that, and Harbor runs it so.
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
    freezes_agent: bool  # frozen; test.sh runs on the pristine image with the agent's state

    @property
    def demonstrates_attacks(self) -> bool:
        """Whether this mode exists only to show that an attack is real."""
        return not (self.clears_reward or self.freezes_agent)


_PLANS = {
    Mode.SHARED: ModePlan(True, False, False),
    Mode.CLEARED: ModePlan(True, True, False),
    Mode.SEALED: ModePlan(False, False, True),
}


def plan(mode: Mode) -> ModePlan:
    """The plan for ``mode``."""
    return _PLANS[mode]
