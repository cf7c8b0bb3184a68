"""Waiting for a task's ``[environment.healthcheck]``, with Harbor's (and Docker's) rules.

The command runs until it passes. Failures during the start period do not count, and the
next attempt follows ``start_interval_sec`` later; after it, attempts are ``interval_sec``
apart and ``retries`` consecutive failures end the wait. The command itself is run by
the caller (``attempt``), so the rules are tested with a fake clock.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from cleanroom.verifiers.container.task import HealthcheckConfig


@dataclass(frozen=True)
class Attempt:
    """One run of the command: whether it passed, and what it printed (for the record)."""

    passed: bool
    note: str = ""


@dataclass(frozen=True)
class Health:
    """How the wait ended: healthy or not, after how many attempts, the last failure."""

    healthy: bool
    attempts: int
    seconds: float
    last_failure: str = ""

    def describe(self, command: str) -> str:
        return (
            f"the healthcheck {command!r} failed {self.attempts} time(s) in "
            f"{self.seconds:.1f} s: {self.last_failure}"
        )


def wait_healthy(
    check: HealthcheckConfig,
    attempt: Callable[[float], Attempt],
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> Health:
    """Run ``attempt(timeout_sec)`` under the healthcheck's rules until it passes or gives up."""
    start = clock()
    start_period_end = start + check.start_period_sec
    failures = 0
    attempts = 0
    while True:
        in_start_period = clock() < start_period_end
        result = attempt(check.timeout_sec)
        attempts += 1
        if result.passed:
            return Health(True, attempts, clock() - start)
        if in_start_period:
            sleep(check.start_interval_sec)
            continue
        failures += 1
        if failures >= check.retries:
            return Health(False, attempts, clock() - start, result.note)
        sleep(check.interval_sec)
