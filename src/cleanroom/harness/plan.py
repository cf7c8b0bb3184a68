"""What a window runs: which isolation tests with how many trials, which task where.

Pure functions over the battery's schedules and the pool's environment names.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from cleanroom.isolation.battery import Schedule


class ScheduledCheck(Protocol):
    """What planning reads of an isolation test."""

    @property
    def name(self) -> str: ...

    @property
    def number(self) -> int: ...

    @property
    def schedule(self) -> Schedule: ...


class UnknownCheck(ValueError):
    """A test was asked for by a name the battery does not hold."""


@dataclass(frozen=True)
class PlannedCheck:
    """One isolation test and the number of trials it runs in each window."""

    name: str
    trials: int


def plan_tests(
    tests: Iterable[ScheduledCheck],
    *,
    soak: bool = False,
    scale: float = 1.0,
    chosen: Sequence[str] | None = None,
    on_demand: bool = False,
) -> list[PlannedCheck]:
    """The tests due in every window, in test-number order.

    The trial count is the schedule's (``soak`` or per window) times ``scale``, never
    below one: a test that is due runs at least once. ``chosen`` names the tests to run
    (on-demand ones included); without it every scheduled test runs, and the on-demand
    ones only with ``on_demand``.
    """
    if scale <= 0:
        raise ValueError(f"the trial scale must be positive, got {scale}")
    by_name = {t.name: t for t in tests}
    if chosen is not None:
        unknown = sorted(set(chosen) - set(by_name))
        if unknown:
            known = ", ".join(sorted(by_name)) or "none registered"
            raise UnknownCheck(f"no isolation test named {', '.join(unknown)} (known: {known})")
        picked = [by_name[n] for n in dict.fromkeys(chosen)]
    else:
        picked = [t for t in by_name.values() if on_demand or not t.schedule.on_demand]
    picked.sort(key=lambda t: (t.number, t.name))
    plan = []
    for t in picked:
        base = t.schedule.soak if soak else t.schedule.window
        plan.append(PlannedCheck(t.name, max(1, round(base * scale))))
    return plan


def assign_tasks(envs: Sequence[str], tasks: Sequence[str], batch: int) -> list[tuple[str, str]]:
    """One smoke task per acting environment, rotated by batch so every environment runs
    every task over successive batches."""
    if not tasks:
        raise ValueError("at least one smoke task is needed")
    return [(env, tasks[(i + batch) % len(tasks)]) for i, env in enumerate(envs)]


# The clipboard test runs once more after every batch of rollouts that used the clipboard
# or typed into Writer, on top of its per-window trials: those rollouts are the ones that
# put text where a clipboard leak would carry it.
FOLLOW_UP_TEST = "clipboard"
FOLLOW_UP_TASKS = frozenset({"writer", "clipboard"})


def follow_up_trials(tests: Sequence[PlannedCheck], tasks_run: Iterable[str]) -> int:
    """How many follow-up clipboard trials a batch of rollouts calls for: one after a
    batch holding any writer or clipboard rollout (the trial reads every environment at
    once, so one covers all of them), none when the clipboard test is not in the plan."""
    if not any(t.name == FOLLOW_UP_TEST for t in tests):
        return 0
    return 1 if FOLLOW_UP_TASKS.intersection(tasks_run) else 0
