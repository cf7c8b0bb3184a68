"""Who broke an environment: the one rule that decides whether a rollout whose desktop
fell over mid-rollout is scored or excluded.

An environment breaks in parts (`Part`): its display, its sandbox or program container,
its session bus, a program, the harness's own connection to the display. Inside a healthy
pool nothing but the agent acts in an environment, so what it holds (its programs, its
bus, the harness's connection that only its own clients could have closed) is the
agent's doing, unless the harness injected the fault itself or the kernel ended it
for memory the environment did not use (the environments' shared group or the machine
running out). The parts the agent cannot reach (the display's server runs in a sandbox
of its own, a sandbox's first process ignores its signals) are the infrastructure's,
unless their own cgroup shows they were ended for memory the agent's clients made them
take, on the limits that are the environment's own.

Pure: the evidence (`Evidence`) is gathered by the environment (its processes, its
cgroups' counters, its container's state) and judged here.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from cleanroom.core.outcomes import Cause


class Part(StrEnum):
    """A part of an environment that can be found dead."""

    DISPLAY = "display"  # its X server (in a sandbox of its own)
    SANDBOX = "sandbox"  # its sandbox's first process, and so the sandbox
    CONTAINER = "container"  # its program container (containers mode)
    SESSION_BUS = "session_bus"  # its D-Bus session bus
    PROGRAM = "program"  # one of its programs
    HARNESS_CONNECTION = "harness_connection"  # the harness's connection to its display
    # The harness's connection to its display, shut by the harness at its deadline while
    # a client of the display held the server (a grab: only the environment's programs
    # reach its display).
    DISPLAY_HELD = "display_held"
    # The same, while the server answered nobody by itself (busy, stopped, hung): the
    # display is alive but no use, and no client of it made it so.
    DISPLAY_STALLED = "display_stalled"


# The parts only the agent's own processes act on, once the harness is not the one acting.
_INSIDE = frozenset({Part.SESSION_BUS, Part.PROGRAM, Part.HARNESS_CONNECTION, Part.DISPLAY_HELD})


@dataclass(frozen=True)
class Problem:
    """One part found dead, with what the status shows about it."""

    part: Part
    detail: str


@dataclass(frozen=True)
class MemoryCount:
    """What one cgroup counted: whether its own memory limit was reached and how many of
    its processes the kernel ended for memory (None: the counter could not be read)."""

    hit_own_limit: bool
    oom_kills: int

    @property
    def own_oom(self) -> bool:
        """Processes ended because the cgroup's own limit was reached."""
        return self.hit_own_limit and self.oom_kills > 0

    @property
    def foreign_oom(self) -> bool:
        """Processes ended for memory while the cgroup stayed under its own limit (the
        environments' group or the machine ran out)."""
        return self.oom_kills > 0 and not self.hit_own_limit


@dataclass(frozen=True)
class Evidence:
    """Everything the rule reads about one environment."""

    problems: tuple[Problem, ...]
    display_memory: MemoryCount | None = None  # the display's sandbox's cgroup
    env_memory: MemoryCount | None = None  # the sandbox's (or program container's) cgroup
    container_oom_killed: bool = False  # the runtime's own word on the program container
    injected: str | None = None  # a fault the harness itself injected (a test's kill)


@dataclass(frozen=True)
class Breakage:
    """Who broke an environment, and what was found."""

    cause: Cause
    why: str

    def to_json(self) -> dict[str, str]:
        return {"cause": self.cause.value, "why": self.why}

    @classmethod
    def from_json(cls, data: Any) -> Breakage | None:
        """The record from its JSON form; None for anything that is not one."""
        if not isinstance(data, dict):
            return None
        try:
            return cls(Cause(str(data.get("cause"))), str(data.get("why", ""))[:2000])
        except ValueError:
            return None


def judge(evidence: Evidence) -> Breakage | None:
    """Who broke the environment; None when nothing is broken."""
    problems = evidence.problems
    if not problems:
        return None
    found = "; ".join(p.detail for p in problems)
    if evidence.injected is not None:
        return Breakage(
            Cause.INFRASTRUCTURE, f"the harness injected a fault ({evidence.injected}): {found}"
        )
    parts = {p.part for p in problems}
    env_memory = evidence.env_memory
    own_oom = evidence.container_oom_killed or (env_memory is not None and env_memory.own_oom)
    if parts & {Part.DISPLAY, Part.DISPLAY_STALLED}:
        display = evidence.display_memory
        if display is not None and display.own_oom:
            return Breakage(
                Cause.AGENT, f"its display ran out of the environment's own memory: {found}"
            )
        if Part.DISPLAY in parts:
            return Breakage(Cause.INFRASTRUCTURE, f"its display died: {found}")
        return Breakage(Cause.INFRASTRUCTURE, f"its display stopped answering: {found}")
    if parts & {Part.SANDBOX, Part.CONTAINER}:
        if own_oom:
            return Breakage(Cause.AGENT, f"it ran out of its own memory: {found}")
        return Breakage(Cause.INFRASTRUCTURE, f"its sandbox died: {found}")
    if env_memory is not None and env_memory.foreign_oom:
        return Breakage(
            Cause.INFRASTRUCTURE,
            f"the kernel ended its processes for memory it did not use: {found}",
        )
    assert parts <= _INSIDE
    if Part.DISPLAY_HELD in parts:
        return Breakage(Cause.AGENT, f"a client of its display held the server (a grab): {found}")
    return Breakage(Cause.AGENT, f"its own processes ended what ran in it: {found}")
