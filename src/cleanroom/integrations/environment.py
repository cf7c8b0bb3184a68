"""Verifying a Harbor environment an agent already acted in (needs ``cleanroom[harbor]``).

The public entry for a loop that drives Harbor's environments itself (TRL's
``HarborEnv``, a trainer's own rollout code) and for cleanroom's Harbor verifier
(`integrations.harbor.SealedVerifier`): `verify_environment_async` takes the task and the
environment and returns the `Outcome`. Two paths do it. Harbor's docker and podman
environments run the agent's container as the ``main`` service of a Compose project on
this machine's daemon: the fast path reaches it through the daemon's API
(`container.verify_compose_service`). Every other environment type goes through Harbor's
own environment interface (`verify_generic`, on the runtime in
`verifiers.container.runtime.harbor`): ``exec``, uploads, downloads and fresh environments
of the same class. ``path="generic"`` takes that path on docker and podman too.

The task folder is read once, with Harbor's own model, and cleanroom's config mapped
from it (`harbor_task.load_harbor_task`).
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from cleanroom.core.errors import CleanroomError, ExtraNotInstalledError
from cleanroom.core.outcomes import Outcome
from cleanroom.integrations.budget import (
    GENERIC_MIN_RESERVE_S,
    MIN_RESERVE_S,
    BudgetPlan,
    plan_budget,
)
from cleanroom.integrations.container import mount_baseline, runtime_of, verify_compose_service
from cleanroom.integrations.harbor_task import load_harbor_task
from cleanroom.verifiers.container.decision.verdict import Evidence, decide
from cleanroom.verifiers.container.modes import Mode

try:
    from harbor.environments.base import BaseEnvironment
    from harbor.environments.docker.docker import DockerEnvironment
    from harbor.models.task.config import StepConfig
    from harbor.models.task.task import Task as HarborTask
    from harbor.models.task.verifier_mode import (
        VerifierEnvironmentMode,
        resolve_step_verifier_mode,
        resolve_task_verifier_mode,
    )
    from harbor.models.trial.paths import EnvironmentPaths
except ImportError as exc:  # the module is only imported by a caller that has Harbor
    raise ExtraNotInstalledError(
        "verifying a Harbor environment", "harbor", exc.name or "harbor"
    ) from exc

from cleanroom.verifiers.container.runtime.harbor import HarborRuntime, verifier_image
from cleanroom.verifiers.container.task import Task, TaskError
from cleanroom.verifiers.container.verify import ActedOn, VerifyOptions, verify_acted_on

# Harbor's environments whose containers the fast path reaches on this machine's daemon.
LOCAL_ENVIRONMENTS = ("docker", "podman")
# How the agent's environment is reached: the fast path where it can, else the generic
# one; or the one named.
PATHS = ("auto", "docker", "generic")
# Harbor's name for the service the agent runs in.
MAIN_SERVICE = "main"

__all__ = [
    "LOCAL_ENVIRONMENTS",
    "PATHS",
    "UnsupportedEnvironmentError",
    "compose_project_name",
    "verify_environment",
    "verify_environment_async",
]


class UnsupportedEnvironmentError(CleanroomError, TypeError):
    """An environment the chosen path cannot verify (a remote one on the Docker fast
    path, a Windows one on the generic path)."""


def compose_project_name(name: str) -> str:
    """The Compose project a session runs as, by Docker Compose's documented rule for
    project names: lower case, starting with a letter or digit, of letters, digits, ``-``
    and ``_`` only (Harbor names its project after the session this way)."""
    name = name.lower()
    if not re.match(r"[a-z0-9]", name):
        name = "0" + name
    return re.sub(r"[^a-z0-9_-]", "-", name)


async def verify_environment_async(
    task_dir: str | os.PathLike[str],
    environment: BaseEnvironment,
    *,
    mode: Mode | str = Mode.SEALED,
    step: str | None = None,
    budget_s: float | None = None,
    path: str = "auto",
    budget_how: str | None = None,
    budget_base_s: float | None = None,
) -> Outcome:
    """Verify the Harbor ``environment`` an agent acted in against the task in
    ``task_dir``; every failure is an outcome (`container.verify_container`).

    ``mode`` is ``sealed`` (the default), ``cleared`` or ``shared``; ``step`` the step
    just done in a multi-step task; ``budget_s`` the time the caller allows (None: no
    limit; `BudgetTooShortError` when no verification fits, saying ``budget_how`` with
    the factor needed on ``budget_base_s`` when given). ``path`` picks how the
    environment is reached (`PATHS`). In Harbor's separate verifier mode, ``environment``
    is the verifier's own, holding the agent's artifacts: they are verified the sealed
    way. The environment is left to its owner, its processes frozen or killed. A task
    the chosen path cannot verify is refused (`UnsupportedByRuntimeError`, as
    `UnsupportedEnvironmentError` refuses an environment).
    """
    if path not in PATHS:
        raise ValueError(f"path={path!r}: choose one of {', '.join(PATHS)}")
    chosen = Mode(mode)
    root = Path(task_dir)
    kind = environment.type()  # an EnvironmentType (a str) or an import path's own name
    local = isinstance(environment, DockerEnvironment) and kind in LOCAL_ENVIRONMENTS
    if path == "docker" and not local:
        raise UnsupportedEnvironmentError(
            f"path=docker: the fast path reaches Harbor's "
            f"{' and '.join(LOCAL_ENVIRONMENTS)} environments, whose containers are on "
            f"this machine, not {getattr(kind, 'value', kind)!r} "
            f"({type(environment).__name__})"
        )
    fast = local and path != "generic"
    if not fast and str(getattr(environment.os, "value", environment.os)) == "windows":
        raise UnsupportedEnvironmentError(
            "the generic path runs POSIX commands: Windows environments are refused"
        )
    try:
        # Harbor's model validates the task; cleanroom's config is mapped from it. In a
        # worker thread, as the loading was before: the loop serves other rollouts.
        harbor_task, task = await asyncio.to_thread(load_harbor_task, root)
    except Exception as exc:  # a task error, or what a parser of Harbor's raised
        ev = Evidence(chosen, details={"task": str(root), "environment": environment.session_id})
        if isinstance(exc, TaskError):
            ev.environment_error = str(exc)
        else:
            ev.environment_error = f"the task folder could not be read: {exc!r}"[:2000]
        return decide(ev)
    step_config = _step(harbor_task, step)
    verifier_mode = (
        resolve_step_verifier_mode(harbor_task.config, step_config)
        if step_config is not None
        else resolve_task_verifier_mode(harbor_task.config)
    )
    # In separate mode Harbor has stopped the agent's environment and hands over a fresh
    # one of the verifier's image with the agent's artifacts put back.
    separate = verifier_mode is VerifierEnvironmentMode.SEPARATE
    # Harbor's limit for a step is the step's own verifier limit (600 s by default).
    limit = float(
        (
            step_config.verifier if step_config is not None else harbor_task.config.verifier
        ).timeout_sec
    )
    budget: BudgetPlan = plan_budget(
        budget_s,
        limit,
        chosen,
        budget_how,
        budget_base_s,
        MIN_RESERVE_S if fast else GENERIC_MIN_RESERVE_S,
    )
    # The folders Harbor makes in the agent's container before the agent starts, bound
    # from the trial folder or not (``--ek auto_mounting=true``).
    paths = EnvironmentPaths.for_os(environment.os)
    made = [paths.agent_dir, paths.verifier_dir, paths.artifacts_dir]
    if step_config is not None or separate:
        # Before each step's verifier Harbor empties /logs/verifier and /tests in the
        # agent's container, making /tests when it is not there; a separate verifier's
        # environment has /tests of its image.
        made.append(paths.tests_dir)
    harness_dirs = [str(p) for p in made]
    if fast:
        outcome = await asyncio.to_thread(
            verify_compose_service,
            task,
            compose_project_name(environment.session_id),
            MAIN_SERVICE,
            chosen,
            harness_dirs,
            step=step,
            budget=budget,
            connect=runtime_of(str(getattr(kind, "value", kind))),
        )
    else:
        outcome = await asyncio.to_thread(
            verify_generic,
            task,
            environment,
            chosen,
            harness_dirs,
            loop=asyncio.get_running_loop(),
            step=step,
            budget=budget,
        )
    return _with_path(outcome, "docker" if fast else "generic", budget, budget_s, limit)


def verify_environment(
    task_dir: str | os.PathLike[str],
    environment: BaseEnvironment,
    *,
    mode: Mode | str = Mode.SEALED,
    step: str | None = None,
    budget_s: float | None = None,
    path: str = "auto",
) -> Outcome:
    """`verify_environment_async` for a caller without an event loop of its own."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise CleanroomError(
            "verify_environment was called inside a running event loop: await "
            "verify_environment_async instead"
        )
    return asyncio.run(
        verify_environment_async(
            task_dir, environment, mode=mode, step=step, budget_s=budget_s, path=path
        )
    )


def verify_generic(
    task: Task,
    environment: BaseEnvironment,
    mode: Mode = Mode.SEALED,
    harness_dirs: Sequence[str] = (),
    *,
    loop: asyncio.AbstractEventLoop | None = None,
    step: str | None = None,
    budget: BudgetPlan | None = None,
) -> Outcome:
    """Verify the Harbor environment ``environment`` the agent acted in, against
    ``task`` (`harbor_task.load_harbor_task`), on the generic path; every failure is an
    outcome, as in `container.verify_compose_service` (whose Docker fast path this
    stands in for). A task the generic path cannot verify (a ``live_processes`` verifier)
    is refused with `UnsupportedByRuntimeError` before the environment is touched.

    ``harness_dirs`` are the folders the harness made before the agent started (their
    own changes, not the agent's). ``loop`` is the event loop ``environment`` belongs to,
    when this runs in a worker thread of it. Fresh environments are made of the same
    class and options, and stopped before this returns; ``environment`` is left to its
    owner, its processes killed.
    """
    task_dir = task.root
    runtime = HarborRuntime(
        type(environment),
        _options_of(environment),
        loop=loop,
        session_prefix=environment.session_id,
    )
    try:
        # In separate mode Harbor hands over the verifier's environment, holding the agent's
        # artifacts: fresh ones are of the verifier's image too.
        separate = task.verifier_environment() is not None
        image = verifier_image(str(task_dir)) if separate else str(task_dir)
        acted = ActedOn(
            container=runtime.adopt(environment, image),
            image=image,
            baseline=mount_baseline(harness_dirs),
            label=environment.session_id,
            step=step,
        )
        budget = budget or BudgetPlan()
        options = VerifyOptions(mode, test_limit_s=budget.test_limit_s)
        outcome = verify_acted_on(
            task, acted, runtime, options, control_alongside=budget.control_alongside
        )
    finally:
        runtime.close()
    return outcome


def _options_of(environment: BaseEnvironment) -> dict[str, Any]:
    """The keyword options ``environment`` was made with, to make its fresh siblings."""
    options = getattr(environment, "options", None)
    if options is None or not hasattr(options, "model_dump"):
        return {}
    return dict(options.model_dump(exclude_unset=True))


def _step(task: HarborTask, name: str | None) -> StepConfig | None:
    """The step Harbor's verifier is asked to verify, in a multi-step task."""
    if name is None:
        if task.has_steps:
            raise ValueError("a multi-step task is verified one step at a time: name the step")
        return None
    for step in task.config.steps or []:
        if step.name == name:
            return step
    raise ValueError(f"step {name!r}: the task has no step of that name")


def _with_path(
    outcome: Outcome, path: str, budget: BudgetPlan, allowed_s: float | None, limit_s: float
) -> Outcome:
    """``outcome`` with how it was reached and how it fitted the time, for people."""
    spent = {
        "allowed_s": allowed_s,
        "test_limit_s": budget.test_limit_s or limit_s,
        "control": "alongside" if budget.control_alongside else "after",
    }
    return replace(outcome, details={**outcome.details, "path": path, "budget": spent})
