"""Isolation rows and windows: what the contamination checks record, and what it means.

An isolation row is ``(test, trial, from_env, to_env, result)``. ``cross`` means
something from ``from_env`` reached ``to_env``; ``lost`` means the check could not read
its inputs. A lost row fails its window, loudly: a check that saw nothing is not a check
that saw no leak. A ``cross`` row of the canary fails its window too: ``env00`` never
receives an action, so any change in it means the whole window cannot be trusted. So
does a ``cross`` row of the token sweep: a token resting where its environment cannot
be, outside any trial that put it there on purpose, is contamination in the window.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

# The canary's test name, and the parked console's (a second canary in env00); defined
# here because an event of either fails its window.
CANARY_TEST = "canaries"
# The token sweep's test name; defined here because a foreign token it finds fails its
# window.
SWEEP_TEST = "token_sweep"
PARKED_CONSOLE_TEST = "parked_console"
# The checks whose cross rows fail a window by themselves, and what each means.
_EVENTS = {
    CANARY_TEST: "canary event(s): env00 changed",
    PARKED_CONSOLE_TEST: "parked console event(s): env00's parked console changed",
    SWEEP_TEST: "foreign token(s) found by the token sweep",
}
# Never opened as a window: rows and rollouts there belong to a control, not to any
# measured window.
CONTROL_WINDOW = 0


class RowResult(StrEnum):
    CLEAN = "clean"
    CROSS = "cross"
    LOST = "lost"


@dataclass(frozen=True)
class IsolationRow:
    """One pair checked by one trial of one isolation test."""

    test: str
    trial: int
    from_env: str
    to_env: str
    result: RowResult
    window: int = 0
    detail: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "result", RowResult(self.result))
        if not self.test:
            raise ValueError("an isolation row names its test")
        if self.trial < 0:
            raise ValueError("trial numbers start at 0")


@dataclass(frozen=True)
class Window:
    """A span of time in which a batch of rollouts runs on all environments."""

    index: int
    started_at: float
    ended_at: float | None = None

    def contains(self, t: float) -> bool:
        end = self.ended_at if self.ended_at is not None else float("inf")
        return self.started_at <= t <= end


@dataclass(frozen=True)
class WindowVerdict:
    """What a window's rows say: how many crossed, how many were lost, and whether it failed."""

    window: int
    rows: int
    cross: int
    lost: int
    failure: str | None  # why the window failed, or None

    @property
    def failed(self) -> bool:
        return self.failure is not None


def judge_window(window: int, rows: Iterable[IsolationRow]) -> WindowVerdict:
    """Count a window's rows. Any `lost` row fails the window and says which tests lost;
    a canary event (a `cross` row of the canary or of the parked console) and a foreign
    token the sweep found (a `cross` row of the sweep) fail it as well."""
    mine = [r for r in rows if r.window == window]
    counts = Counter(r.result for r in mine)
    lost_tests = sorted({r.test for r in mine if r.result is RowResult.LOST})
    reasons = []
    if lost_tests:
        reasons.append(f"{counts[RowResult.LOST]} lost row(s) from {', '.join(lost_tests)}")
    for test, said in _EVENTS.items():
        events = sum(1 for r in mine if r.test == test and r.result is RowResult.CROSS)
        if events:
            reasons.append(f"{events} {said}")
    failure = "; ".join(reasons) or None
    return WindowVerdict(
        window, len(mine), counts[RowResult.CROSS], counts[RowResult.LOST], failure
    )


def judge_windows(rows: Iterable[IsolationRow]) -> list[WindowVerdict]:
    """One verdict per window that has rows, in window order."""
    rows = list(rows)
    return [judge_window(w, rows) for w in sorted({r.window for r in rows})]


def trials_per_test(rows: Iterable[IsolationRow]) -> dict[str, int]:
    """How many distinct trials each test ran (per window, summed)."""
    seen = {(r.test, r.window, r.trial) for r in rows}
    out: Counter[str] = Counter(test for test, _, _ in seen)
    return dict(sorted(out.items()))
