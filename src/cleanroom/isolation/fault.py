"""The deliberate faults of the pool itself, by name: leaky controls beside the leaky
setups, for the checks that no shared display, profile, runtime folder, home or clipboard
makes fire. A check names the faults it detects beside its leaks (`IsolationCheck.faults`);
`isolation.controls.faults` puts each in place."""

from __future__ import annotations

from enum import StrEnum


class Fault(StrEnum):
    """A protection of the pool removed on purpose."""

    GENERATION_CHECK_BYPASSED = "generation-check-bypassed"
    CRASH_HITS_BYSTANDER = "crash-hits-bystander"

    @property
    def description(self) -> str:
        return _DESCRIPTIONS[self]


_DESCRIPTIONS = {
    Fault.GENERATION_CHECK_BYPASSED: "the pool applies actions aimed at any generation",
    Fault.CRASH_HITS_BYSTANDER: "a crash of one environment also kills another's programs",
}
