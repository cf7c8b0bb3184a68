"""Deliberate faults of the pool itself: leaky controls beside the leaky setups.

`stale_generation` guards against a generation check that lets a stale action through,
which no shared display, profile, runtime folder, home or clipboard causes, so this
fault is its only leaky control. `crash_blast_radius` fires under four of the leaks
already; its fault, a kill that also takes a neighbour's programs down, proves it on the
isolated pool. With its fault in place each test must report ``cross``. The faults touch
only the pool object they are given.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from cleanroom.core.canary import CANARY_ENV
from cleanroom.environments.interface import Desktops, Kill
from cleanroom.isolation.battery import IsolationCheck
from cleanroom.isolation.checks.crash_blast_radius import CrashBlastRadiusCheck, kill_environment
from cleanroom.isolation.checks.stale_generation import StaleGenerationCheck
from cleanroom.isolation.fault import Fault


def kill_with_bystander(pool: Desktops, target: str) -> list[str]:
    """Kill the target as `kill_environment` does, and the programs of the next
    environment as well: the blast radius the crash test must see."""
    hit = kill_environment(pool, target)
    bystander = next(n for n in pool.names if n not in (target, CANARY_ENV))
    pool.kill(bystander, Kill.PROGRAMS, "the crash test's leaky control killed its programs")
    return [*hit, bystander]


@contextmanager
def with_fault(fault: Fault, pool: Desktops) -> Iterator[IsolationCheck]:
    """The test that ``fault`` proves, set up to run on ``pool`` with the fault in place."""
    if fault is Fault.GENERATION_CHECK_BYPASSED:
        with pool.without_generation_check():
            yield StaleGenerationCheck()
    elif fault is Fault.CRASH_HITS_BYSTANDER:
        yield CrashBlastRadiusCheck(kill=kill_with_bystander)
    else:  # pragma: no cover - every member is handled above
        raise ValueError(f"unknown fault {fault!r}")
