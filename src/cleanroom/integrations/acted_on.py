"""Verifying a container another harness started and its agent already acted in.

Harness-neutral and importable without that harness: the harness names the container
(a Compose project and service), cleanroom finds it through its Docker layer, verifies it
(`verify.verify_acted_on`) and turns the outcome into what such a harness records: a
score, or an `InvalidOutcomeError` for an outcome that must not be scored.
"""

from __future__ import annotations

import math
import posixpath
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from cleanroom.core.outcomes import Outcome, Reason, Status
from cleanroom.verifiers.container.decision.tamper import Change, ChangeKind
from cleanroom.verifiers.container.decision.verdict import Evidence, decide
from cleanroom.verifiers.container.modes import Mode
from cleanroom.verifiers.container.runtime import RuntimeUnavailable
from cleanroom.verifiers.container.runtime.docker import DockerRuntime
from cleanroom.verifiers.container.verify import (
    ActedOn,
    VerifyOptions,
    load_into,
    verify_acted_on,
)

# The labels Docker Compose puts on every container it starts.
COMPOSE_PROJECT_LABEL = "com.docker.compose.project"
COMPOSE_SERVICE_LABEL = "com.docker.compose.service"


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


class BudgetTooShortError(Exception):
    """The harness stops the verifier before cleanroom's own limits can act: an agent
    could then make its run end in the harness's timeout, with no reward, instead of its
    0. Refused before the agent's container is looked at."""


@dataclass(frozen=True)
class BudgetPlan:
    """How a verification fits the time a harness allows it: the limit its tests run
    under (None: the task's own) and whether the pristine control runs beside the
    verification rather than after it."""

    test_limit_s: float | None = None
    control_alongside: bool = False


def budget_needed(limit_s: float, mode: Mode) -> float:
    """The time a verification of a task whose tests may run ``limit_s`` takes at most,
    one step after another: in `sealed` the pristine control's tests after the
    verification's (at most half the limit: a control that takes longer does not count),
    plus `OVERHEAD_S`."""
    control = limit_s / 2 if mode is Mode.SEALED else 0.0
    return limit_s + control + OVERHEAD_S


def plan_budget(
    allowed_s: float | None,
    limit_s: float,
    mode: Mode,
    how: str,
    base_s: float | None = None,
    min_reserve_s: float = MIN_RESERVE_S,
) -> BudgetPlan:
    """Fit a verification into ``allowed_s`` (None: no limit).

    With room for everything one step after another it runs as it would alone. Otherwise
    the pristine control runs beside the verification, and the tests get what is left
    after a reserve for the rest (at least ``min_reserve_s``), up to the task's
    ``limit_s``: the whole verification
    then ends inside the budget, so an agent cannot trade its 0 for the harness's
    timeout. `BudgetTooShortError` when less than `MIN_TEST_S` would be left, naming
    what to change: ``how``, given the factor needed on ``base_s`` (the harness's own
    base for its limit; the task's ``limit_s`` unless the harness overrides it)."""
    if allowed_s is None or allowed_s >= budget_needed(limit_s, mode):
        return BudgetPlan()
    reserve = min(OVERHEAD_S, max(min_reserve_s, allowed_s / 10))
    tests = min(limit_s, allowed_s - reserve)
    if tests < MIN_TEST_S:
        factor = math.ceil((MIN_TEST_S + min_reserve_s) / (base_s or limit_s) * 10) / 10
        raise BudgetTooShortError(
            f"the verifier is allowed {allowed_s:g} s; cleanroom keeps {reserve:g} s of it "
            f"for stopping the agent, copying its state and starting a fresh container, "
            f"which leaves {max(tests, 0.0):g} s for tests the task limits to {limit_s:g} s "
            f"(at least {MIN_TEST_S:g} s are needed): {how.format(factor)}"
        )
    return BudgetPlan(
        test_limit_s=tests if tests < limit_s else None,
        control_alongside=mode is Mode.SEALED,
    )


class InvalidOutcomeError(Exception):
    """An outcome that must not be scored (the infrastructure failed): raised so that
    the harness records no reward, never a 0. Carries the outcome."""

    def __init__(self, outcome: Outcome) -> None:
        if outcome.status is not Status.INVALID or outcome.reason is None:
            raise ValueError("only an invalid outcome is raised")
        self.outcome = outcome
        super().__init__(f"cleanroom: invalid ({outcome.reason.value}): {outcome.detail}")


class VerifierUnavailableError(InvalidOutcomeError):
    """An invalid outcome because the container daemon (or Harbor's environment) did not
    answer: the one kind of invalid that a second try may not meet. Harbor decides by the
    exception's class name whether to retry (`override_error_policy`), so it has a name
    of its own."""


def invalid_outcome_error(outcome: Outcome) -> InvalidOutcomeError:
    """The exception ``outcome`` (invalid) is raised as."""
    if outcome.reason is Reason.VERIFIER_UNAVAILABLE:
        return VerifierUnavailableError(outcome)
    return InvalidOutcomeError(outcome)


def rewards_of(outcome: Outcome) -> dict[str, float]:
    """The rewards a harness records for ``outcome``; `InvalidOutcomeError` when invalid.

    What the agent caused (a planted reward, a broken work dir) is a valid 0 and is
    scored like any other failure.
    """
    if outcome.status is Status.INVALID or outcome.score is None:
        raise invalid_outcome_error(outcome)
    return {"reward": outcome.score}


def mount_baseline(destinations: Iterable[str]) -> tuple[Change, ...]:
    """What the harness changed in the container before the agent: Docker makes each
    mount point, and the folders above it, in the container's own layer."""
    made: set[str] = set()
    for dest in destinations:
        path = posixpath.normpath(dest)
        while path not in ("/", "", "."):
            made.add(path)
            path = posixpath.dirname(path)
    return tuple(Change(p, ChangeKind.ADDED) for p in sorted(made))


def verify_compose_service(
    task_dir: Path,
    project: str,
    service: str,
    mode: Mode = Mode.SEALED,
    harness_dirs: Iterable[str] = (),
    connect: Callable[[], DockerRuntime] = DockerRuntime.connect,
    step: str | None = None,
    budget: BudgetPlan = BudgetPlan(),
) -> Outcome:
    """Verify the container of ``service`` in the Compose ``project`` against the task in
    ``task_dir`` (against its ``step``, in a multi-step task); every failure is an
    outcome, as in `verify.verify_path`.

    ``harness_dirs`` are the folders the harness made in the container before the agent
    started (Harbor's ``/logs/agent``, ``/logs/verifier``...), whether bound from the
    host or not: they are its changes, not the agent's; what is inside them is not.
    """
    ev = Evidence(mode, details={"task": str(task_dir), "project": project, "service": service})
    task = load_into(ev, task_dir)
    if task is None:
        return decide(ev)
    try:
        runtime = connect()
        container = runtime.containers.find(
            {COMPOSE_PROJECT_LABEL: project, COMPOSE_SERVICE_LABEL: service}
        )
        started = runtime.containers.started(container)
        others = runtime.containers.of_project(
            COMPOSE_PROJECT_LABEL, project, COMPOSE_SERVICE_LABEL
        )
    except RuntimeUnavailable as exc:
        ev.unavailable = str(exc)
        return decide(ev)
    host_reward_dir = started.mounts.get(task.config.verifier.reward_dir)
    acted = ActedOn(
        container=container,
        image=started.image,
        reward_dir=Path(host_reward_dir) if host_reward_dir else None,
        baseline=mount_baseline([*started.mounts, *harness_dirs]),
        label=f"{project}/{service}",
        step=step,
        services=tuple((name, ctr) for name, ctr in sorted(others.items()) if name != service),
    )
    options = VerifyOptions(mode, test_limit_s=budget.test_limit_s)
    return verify_acted_on(
        task, acted, runtime, options, control_alongside=budget.control_alongside
    )
