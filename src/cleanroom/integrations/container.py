"""Verifying a container another harness started and its agent already acted in.

The public entry for a loop that has a Harbor task and a finished agent container
(`verify_container`, `verify_container_async`): cleanroom finds the container through its
Docker layer (Docker's daemon or podman's compatible API), verifies it against the task
(`verify.verify_acted_on`, ``sealed`` by default) and returns the `Outcome`. Whatever goes
wrong on the way is an outcome with a reason, never an exception: an unusable task
folder, a daemon that does not answer or a container that is not there is `invalid`
(excluded), what the agent did is its 0. The one exception is a budget too short for any
verification (`BudgetTooShortError`), refused before the container is looked at.
"""

from __future__ import annotations

import asyncio
import functools
import os
import posixpath
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict, Unpack

from cleanroom.core.outcomes import Outcome
from cleanroom.docker_layer import PODMAN_HOST
from cleanroom.integrations.budget import UNLIMITED, BudgetPlan, plan_budget
from cleanroom.verifiers.container.decision.tamper import Change, ChangeKind
from cleanroom.verifiers.container.decision.verdict import Evidence, decide
from cleanroom.verifiers.container.modes import Mode
from cleanroom.verifiers.container.run.spare_verifier import spares_for
from cleanroom.verifiers.container.runtime import RuntimeUnavailable
from cleanroom.verifiers.container.runtime.docker import DockerRuntime
from cleanroom.verifiers.container.task import Task
from cleanroom.verifiers.container.verify import (
    ActedOn,
    VerifyOptions,
    load_into,
    verify_acted_on,
)

# The labels Docker Compose puts on every container it starts.
COMPOSE_PROJECT_LABEL = "com.docker.compose.project"
COMPOSE_SERVICE_LABEL = "com.docker.compose.service"
# The container engines a container can be verified on.
ENGINES = ("docker", "podman")

__all__ = [
    "ENGINES",
    "ContainerOptions",
    "ContainerVerification",
    "check_budget",
    "check_engine",
    "mount_baseline",
    "runtime_of",
    "verify_compose_service",
    "verify_container",
    "verify_container_async",
    "verify_requested",
]


class ContainerOptions(TypedDict, total=False):
    """How a container is verified, besides which one: the keywords `verify_container`
    and every entry point over it take, each a field of `ContainerVerification`."""

    mode: Mode | str
    step: str | None
    budget_s: float | None
    engine: str
    harness_dirs: Iterable[str]


@dataclass(frozen=True)
class ContainerVerification:
    """A verification of ``container`` (a name or ID on ``engine``'s daemon), in which an
    agent already acted, against the Harbor task in ``task_dir``.

    ``mode`` is ``sealed`` (the default), ``cleared`` or ``shared`` (forgeable; for
    comparison only). ``step`` names the step just done, in a multi-step task.
    ``budget_s`` is the time the caller allows the whole verification (None: no limit):
    the verification is fitted into it, or `BudgetTooShortError` says what would do.
    ``harness_dirs`` are the folders the caller made in the container before the agent
    started (bound from the host or not): their being there is not the agent's doing.
    The fields after ``container`` are the keywords of `ContainerOptions`.
    """

    task_dir: Path
    container: str
    mode: Mode = Mode.SEALED
    step: str | None = None
    budget_s: float | None = None
    engine: str = "docker"
    harness_dirs: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "task_dir", Path(self.task_dir))
        object.__setattr__(self, "mode", Mode(self.mode))
        object.__setattr__(self, "harness_dirs", tuple(self.harness_dirs))
        check_engine(self.engine)

    @classmethod
    def of(
        cls,
        task_dir: str | os.PathLike[str],
        container: str,
        **options: Unpack[ContainerOptions],
    ) -> ContainerVerification:
        """The verification the keywords describe (a mode may be given by its name, the
        harness's folders as any iterable)."""
        # __post_init__ makes the mode a Mode and the folders a tuple.
        return cls(Path(task_dir), container, **options)  # type: ignore[arg-type]


def check_engine(engine: str) -> None:
    """Refuse an engine no container can be verified on (`ENGINES`)."""
    if engine not in ENGINES:
        raise ValueError(f"engine={engine!r}: choose one of {', '.join(ENGINES)}")


def runtime_of(engine: str, labels: Mapping[str, str] | None = None) -> Callable[[], DockerRuntime]:
    """How to reach the daemon of ``engine``: Docker's (``DOCKER_HOST`` or the local
    socket) or podman's Docker-compatible API; ``labels`` go on everything the runtime
    creates."""
    check_engine(engine)
    host = PODMAN_HOST if engine == "podman" else None
    return functools.partial(DockerRuntime.connect, labels, host=host)


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


def verify_container(
    task_dir: str | os.PathLike[str], container: str, **options: Unpack[ContainerOptions]
) -> Outcome:
    """Verify ``container`` (a name or ID on the daemon of ``engine``, ``docker`` by
    default), in which an agent already acted, against the Harbor task in ``task_dir``,
    as ``options`` say (`ContainerVerification`: ``mode``, ``step``, ``budget_s``,
    ``engine``, ``harness_dirs``).

    The container is left to its owner, frozen or killed as the mode needs, never
    removed. Everything else that goes wrong is in the outcome.
    """
    return verify_requested(ContainerVerification.of(task_dir, container, **options))


async def verify_container_async(
    task_dir: str | os.PathLike[str], container: str, **options: Unpack[ContainerOptions]
) -> Outcome:
    """`verify_container` for an event loop: the verification runs in a worker thread,
    so the loop goes on serving the caller's other rollouts."""
    request = ContainerVerification.of(task_dir, container, **options)
    return await asyncio.to_thread(verify_requested, request)


def verify_requested(request: ContainerVerification) -> Outcome:
    """`verify_container` of a verification described already."""
    ev = Evidence(
        request.mode, details={"task": str(request.task_dir), "container": request.container}
    )
    task = load_into(ev, request.task_dir)
    if task is None:
        return decide(ev)
    budget = _plan(task, request.mode, request.step, request.budget_s)
    try:
        runtime = runtime_of(request.engine)()
    except RuntimeUnavailable as exc:
        ev.unavailable = str(exc)
        return decide(ev)
    return _verify_found(
        task,
        runtime,
        ev,
        request.container,
        None,
        request.harness_dirs,
        step=request.step,
        mode=request.mode,
        budget=budget,
    )


def verify_compose_service(
    task: Task,
    project: str,
    service: str,
    mode: Mode = Mode.SEALED,
    harness_dirs: Iterable[str] = (),
    connect: Callable[[], DockerRuntime] = DockerRuntime.connect,
    step: str | None = None,
    budget: BudgetPlan = UNLIMITED,
) -> Outcome:
    """Verify the container of ``service`` in the Compose ``project`` (Harbor's docker
    and podman environments run the agent as such a service), as `verify_container`
    does, against ``task`` as the caller loaded it; the time was planned by the caller
    (``budget``)."""
    ev = Evidence(mode, details={"task": str(task.root), "project": project, "service": service})
    try:
        runtime = connect()
        container = runtime.containers.find(
            {COMPOSE_PROJECT_LABEL: project, COMPOSE_SERVICE_LABEL: service}
        )
    except RuntimeUnavailable as exc:
        ev.unavailable = str(exc)
        return decide(ev)
    label = f"{project}/{service}"
    return _verify_found(
        task,
        runtime,
        ev,
        container,
        label,
        harness_dirs,
        step=step,
        mode=mode,
        budget=budget,
        spares=True,
    )


def check_budget(request: ContainerVerification) -> None:
    """Refuse, as `verify_container` would, a budget too short for any verification of
    ``request`` (`BudgetTooShortError`), before anything runs. A task folder that cannot
    be loaded passes: its verification's outcome says what is wrong."""
    if request.budget_s is None:
        return
    task = load_into(Evidence(request.mode), request.task_dir)
    if task is not None:
        _plan(task, request.mode, request.step, request.budget_s)


def _plan(task: Task, mode: Mode, step: str | None, budget_s: float | None) -> BudgetPlan:
    """The plan that fits a verification of ``task`` (its ``step``) into ``budget_s``."""
    named = next((s for s in task.steps if s.name == step), None)
    limit = (named.config if named else task.config).verifier.timeout_sec
    return plan_budget(budget_s, limit, mode)


def _verify_found(
    task: Task,
    runtime: DockerRuntime,
    ev: Evidence,
    container: str,
    label: str | None,
    harness_dirs: Iterable[str],
    *,
    step: str | None,
    mode: Mode,
    budget: BudgetPlan,
    spares: bool = False,
) -> Outcome:
    """Verify ``container`` as its daemon's inspect describes it: the image it was
    started from, what is bound into it, and, for a Compose service, the project's other
    services beside it. A daemon that stops answering is ``ev``'s outcome. With
    ``spares`` (a harness that verifies trial after trial: Harbor's environments), a
    warm verifier's container of the same kind is taken when one is up."""
    try:
        started = runtime.containers.started(container)
        project = started.labels.get(COMPOSE_PROJECT_LABEL)
        service = started.labels.get(COMPOSE_SERVICE_LABEL)
        siblings: dict[str, str] = {}
        if project and service:
            siblings = runtime.containers.of_project(
                COMPOSE_PROJECT_LABEL, project, COMPOSE_SERVICE_LABEL
            )
            siblings.pop(service, None)
    except RuntimeUnavailable as exc:
        ev.unavailable = str(exc)
        return decide(ev)
    host_reward_dir = started.mounts.get(task.config.verifier.reward_dir)
    acted = ActedOn(
        container=started.id or container,
        image=started.image,
        reward_dir=Path(host_reward_dir) if host_reward_dir else None,
        baseline=mount_baseline([*started.mounts, *harness_dirs]),
        label=label or started.name or container,
        step=step,
        services=tuple(sorted(siblings.items())),
    )
    # A loop verifies many rollouts of its tasks: each verification takes a warm
    # verifier's container of its kind, started after the one before it ended.
    kept = None
    if spares:
        connect = functools.partial(DockerRuntime.connect, runtime.labels, host=runtime.docker.host)
        kept = spares_for(runtime.docker.host, runtime.labels, connect)
    options = VerifyOptions(mode, test_limit_s=budget.test_limit_s, spares=kept)
    return verify_acted_on(
        task, acted, runtime, options, control_alongside=budget.control_alongside
    )
