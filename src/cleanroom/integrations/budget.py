"""Fitting a verification into the time a caller allows it.

A harness that stops the verifier at its own limit (Harbor's verifier timeout, a
trainer's reward timeout) must not stop it before cleanroom's own limits act: an agent
could then make its run end in the harness's timeout, with no reward, instead of its 0.
`plan_budget` fits the verification in, or refuses the budget before anything runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from cleanroom.core.errors import BudgetTooShortError
from cleanroom.verifiers.container.modes import Mode

# Besides its tests, a verification freezes the agent, copies its state and starts
# containers; the time a harness allows must cover that as well. With room for the
# pristine control after the verification, `OVERHEAD_S` is kept for it; in a tight budget
# a tenth of the budget, between `MIN_RESERVE_S` and `OVERHEAD_S`.
OVERHEAD_S = 60.0
MIN_RESERVE_S = 10.0
# Harbor's generic environment interface starts a fresh environment through its engine
# and moves every file by a command and a download: it needs more of the budget.
GENERIC_MIN_RESERVE_S = 30.0
# Less than this for the tests is no verification worth running.
MIN_TEST_S = 5.0

__all__ = [
    "GENERIC_MIN_RESERVE_S",
    "MIN_RESERVE_S",
    "UNLIMITED",
    "BudgetPlan",
    "BudgetTooShortError",
    "budget_needed",
    "plan_budget",
]


@dataclass(frozen=True)
class BudgetPlan:
    """How a verification fits the time a harness allows it: the limit its tests run
    under (None: the task's own) and whether the pristine control runs beside the
    verification rather than after it."""

    test_limit_s: float | None = None
    control_alongside: bool = False


# What a refusal tells a caller to change, given the factor needed on the task's limit.
DEFAULT_HOW = "allow the verification {} times the task's verifier limit (or more)"
# The plan without a limit: the verification runs as it would alone.
UNLIMITED = BudgetPlan()


def budget_needed(limit_s: float, mode: Mode) -> float:
    """The time a verification of a task whose tests may run ``limit_s`` takes at most,
    one step after another: in `sealed` the pristine control's tests after the
    verification's (up to the limit: a control counts when it ends within it), plus
    `OVERHEAD_S`."""
    control = limit_s if mode is Mode.SEALED else 0.0
    return limit_s + control + OVERHEAD_S


def plan_budget(
    allowed_s: float | None,
    limit_s: float,
    mode: Mode,
    how: str | None = None,
    base_s: float | None = None,
    min_reserve_s: float = MIN_RESERVE_S,
) -> BudgetPlan:
    """Fit a verification into ``allowed_s`` (None: no limit).

    With room for everything one step after another it runs as it would alone. Otherwise
    the pristine control runs beside the verification, and the tests get what is left
    after a reserve for the rest (at least ``min_reserve_s``), up to the task's
    ``limit_s``: the whole verification then ends inside the budget, so an agent cannot
    trade its 0 for the harness's timeout. `BudgetTooShortError` when less than
    `MIN_TEST_S` would be left, naming what to change: ``how``, given the factor needed
    on ``base_s`` (the harness's own base for its limit; the task's ``limit_s`` unless
    the harness overrides it). `ValueError` for an ``allowed_s`` that is no finite number
    of seconds above 0."""
    if allowed_s is not None and (
        isinstance(allowed_s, bool)
        or not isinstance(allowed_s, int | float)
        or not math.isfinite(allowed_s)
        or allowed_s <= 0
    ):
        raise ValueError(f"budget_s={allowed_s!r}: a number of seconds above 0, or None")
    if allowed_s is None or allowed_s >= budget_needed(limit_s, mode):
        return BudgetPlan()
    reserve = min(OVERHEAD_S, max(min_reserve_s, allowed_s / 10))
    tests = min(limit_s, allowed_s - reserve)
    if tests < MIN_TEST_S:
        needed = MIN_TEST_S + min_reserve_s
        factor = math.ceil(needed / (base_s or limit_s) * 10) / 10
        raise BudgetTooShortError(
            f"the verifier is allowed {allowed_s:g} s; cleanroom keeps {reserve:g} s of it "
            f"for stopping the agent, copying its state and starting a fresh container, "
            f"which leaves {max(tests, 0.0):g} s for tests the task limits to {limit_s:g} s "
            f"(at least {MIN_TEST_S:g} s are needed): {(how or DEFAULT_HOW).format(factor)}",
            allowed_s=allowed_s,
            needed_s=needed,
        )
    return BudgetPlan(
        test_limit_s=tests if tests < limit_s else None,
        control_alongside=mode is Mode.SEALED,
    )
