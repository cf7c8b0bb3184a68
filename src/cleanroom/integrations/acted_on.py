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
from pathlib import Path

from cleanroom.core.outcomes import Outcome, Status
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
# containers; the time a harness allows must cover that as well.
OVERHEAD_S = 60.0


class BudgetTooShortError(Exception):
    """The harness stops the verifier before cleanroom's own limits can act: an agent
    could then make its run end in the harness's timeout, with no reward, instead of its
    0. Refused before the agent's container is looked at."""


def budget_needed(limit_s: float, mode: Mode) -> float:
    """The time a harness must allow a verification of a task whose tests may run
    ``limit_s``: in `sealed` the tests may run twice (on the agent's state, then as the
    pristine control), plus `OVERHEAD_S`."""
    runs = 2 if mode is Mode.SEALED else 1
    return runs * limit_s + OVERHEAD_S


def check_budget(
    allowed_s: float | None, limit_s: float, mode: Mode, how: str, base_s: float | None = None
) -> None:
    """`BudgetTooShortError` when ``allowed_s`` (None: no limit) is under `budget_needed`,
    naming what to change: ``how``, given the factor needed on ``base_s`` (the harness's
    own base for its limit; the task's ``limit_s`` unless the harness overrides it)."""
    needed = budget_needed(limit_s, mode)
    if allowed_s is None or allowed_s >= needed:
        return
    factor = math.ceil(needed / (base_s or limit_s) * 10) / 10
    raise BudgetTooShortError(
        f"the verifier is allowed {allowed_s:g} s, but a {mode.value} verification of this "
        f"task (tests limited to {limit_s:g} s) needs up to {needed:g} s: {how.format(factor)}"
    )


class InvalidOutcomeError(Exception):
    """An outcome that must not be scored (the infrastructure failed): raised so that
    the harness records no reward, never a 0. Carries the outcome."""

    def __init__(self, outcome: Outcome) -> None:
        if outcome.status is not Status.INVALID or outcome.reason is None:
            raise ValueError("only an invalid outcome is raised")
        self.outcome = outcome
        super().__init__(f"cleanroom: invalid ({outcome.reason.value}): {outcome.detail}")


def rewards_of(outcome: Outcome) -> dict[str, float]:
    """The rewards a harness records for ``outcome``; `InvalidOutcomeError` when invalid.

    What the agent caused (a planted reward, a broken work dir) is a valid 0 and is
    scored like any other failure.
    """
    if outcome.status is Status.INVALID or outcome.score is None:
        raise InvalidOutcomeError(outcome)
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
    return verify_acted_on(task, acted, runtime, VerifyOptions(mode))
