"""cleanroom's sealed verification as a Harbor verifier (needs ``cleanroom[harbor]``).

    harbor run -p TASK -a AGENT \\
        --verifier cleanroom.integrations.harbor:SealedVerifier

After the agent phase Harbor hands this verifier the agent's environment; it stops the
agent's processes, checks what the agent left in the verifier's places, and runs the
task's tests in a fresh environment of the pristine image with only the agent's state
copied in (see `verifiers.container.verify`). A valid outcome, including the agent's own
0 for tampering, is returned as the reward; an invalid one is raised, so that Harbor
records the trial's exception and no reward rather than a 0.

Two paths do it. Harbor's docker and podman environments run the agent's container as
the ``main`` service of a Compose project on this machine's daemon: the fast path reaches
it through the daemon's API (`acted_on.verify_compose_service`). Every other environment
type goes through Harbor's own environment interface (`harbor_runtime`): ``exec``,
uploads, downloads and fresh environments from the same class. ``--verifier-kwarg
path=generic`` takes that path on docker and podman too.
"""

from __future__ import annotations

import asyncio
import functools
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harbor.environments.base import BaseEnvironment
from harbor.environments.docker.docker import DockerEnvironment
from harbor.models.task.config import StepConfig
from harbor.models.task.verifier_mode import (
    VerifierEnvironmentMode,
    resolve_step_verifier_mode,
    resolve_task_verifier_mode,
)
from harbor.models.trial.config import TrialConfig
from harbor.models.trial.paths import EnvironmentPaths
from harbor.models.verifier.result import VerifierResult
from harbor.verifier.base import BaseVerifier

from cleanroom.docker_layer import PODMAN_HOST
from cleanroom.integrations.acted_on import (
    GENERIC_MIN_RESERVE_S,
    MIN_RESERVE_S,
    BudgetTooShortError,
    InvalidOutcomeError,
    VerifierUnavailableError,
    plan_budget,
    rewards_of,
    verify_compose_service,
)
from cleanroom.integrations.harbor_runtime import verify_environment
from cleanroom.verifiers.container.modes import Mode
from cleanroom.verifiers.container.runtime.docker import DockerRuntime

# Harbor's environments whose containers the fast path reaches on this machine's daemon.
LOCAL_ENVIRONMENTS = ("docker", "podman")
# How SealedVerifier reaches the agent's environment: the fast path where it can, else
# the generic one; or the one named.
PATHS = ("auto", "docker", "generic")
# Harbor's name for the service the agent runs in.
MAIN_SERVICE = "main"
# Written into the trial folder (not a folder bound into the agent's container).
OUTCOME_FILE = "cleanroom-outcome.json"

__all__ = [
    "BudgetTooShortError",
    "InvalidOutcomeError",
    "SealedVerifier",
    "VerifierUnavailableError",
    "compose_project_name",
]


def compose_project_name(name: str) -> str:
    """The Compose project a session runs as, by Docker Compose's documented rule for
    project names: lower case, starting with a letter or digit, of letters, digits, ``-``
    and ``_`` only (Harbor names its project after the session this way)."""
    name = name.lower()
    if not re.match(r"[a-z0-9]", name):
        name = "0" + name
    return re.sub(r"[^a-z0-9_-]", "-", name)


def _runtime_of(kind: str) -> Callable[[], DockerRuntime]:
    """How to reach the daemon that runs the containers of an environment of ``kind``:
    podman's API for Harbor's podman environment (a `DockerEnvironment` with podman as
    its engine), else Docker's."""
    if kind == "podman":
        return functools.partial(DockerRuntime.connect, host=PODMAN_HOST)
    return DockerRuntime.connect


class SealedVerifier(BaseVerifier):
    """Harbor's verifier hook running cleanroom's verification (``sealed`` by default;
    ``--verifier-kwarg mode=cleared`` or ``shared`` for comparison).

    ``budget_s`` is the time the harness allows the verifier, for a harness that drives
    Harbor's classes with its own limit; by default it is the limit Harbor's own trial
    computes (from the trial's ``config.json`` when there is one, else the task's).
    ``path`` picks how the agent's environment is reached (`PATHS`): ``auto`` takes the
    Docker fast path for Harbor's docker and podman environments and the generic path
    for every other type."""

    def __init__(
        self,
        *,
        mode: str = Mode.SEALED.value,
        budget_s: float | None = None,
        path: str = "auto",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if path not in PATHS:
            raise ValueError(f"verifier kwarg path={path!r}: choose one of {', '.join(PATHS)}")
        self.path = path
        try:
            self.mode = Mode(mode)
        except ValueError:
            choices = ", ".join(m.value for m in Mode)
            raise ValueError(f"verifier kwarg mode={mode!r}: choose one of {choices}") from None
        if budget_s is not None and not (isinstance(budget_s, int | float) and budget_s > 0):
            raise ValueError(f"verifier kwarg budget_s={budget_s!r}: a number of seconds above 0")
        self.budget_s = float(budget_s) if budget_s is not None else None

    async def verify(self) -> VerifierResult:
        environment: BaseEnvironment = self.environment
        kind = environment.type()  # an EnvironmentType (a str) or an import path's own name
        local = isinstance(environment, DockerEnvironment) and kind in LOCAL_ENVIRONMENTS
        if self.path == "docker" and not local:
            raise TypeError(
                f"verifier kwarg path=docker: the fast path reaches Harbor's "
                f"{' and '.join(LOCAL_ENVIRONMENTS)} environments, whose containers are on "
                f"this machine, not {getattr(kind, 'value', kind)!r} "
                f"({type(environment).__name__})"
            )
        fast = local and self.path != "generic"
        if not fast and str(getattr(environment.os, "value", environment.os)) == "windows":
            raise TypeError(
                "the generic path runs POSIX commands: Windows environments are refused"
            )
        step = self._step()
        mode = (
            resolve_step_verifier_mode(self.task.config, step)
            if step is not None
            else resolve_task_verifier_mode(self.task.config)
        )
        # In separate mode Harbor has stopped the agent's environment and hands this
        # verifier a fresh one of the verifier's image with the agent's artifacts put
        # back: they are verified the sealed way, as cleanroom verifies such a task.
        separate = mode is VerifierEnvironmentMode.SEPARATE
        # Harbor's limit for a step is the step's own verifier limit (600 s by default).
        limit = float(
            (step.verifier if step is not None else self.task.config.verifier).timeout_sec
        )
        allowed, base = self._harbor_budget(limit)
        budget = plan_budget(
            allowed,
            limit,
            self.mode,
            "run harbor with --verifier-timeout-multiplier {} (or more)",
            base,
            MIN_RESERVE_S if fast else GENERIC_MIN_RESERVE_S,
        )
        task_dir = Path(self.task.paths.task_dir)
        # The folders Harbor makes in the agent's container before the agent starts,
        # bound from the trial folder or not (``--ek auto_mounting=true``).
        paths = EnvironmentPaths.for_os(environment.os)
        made = [paths.agent_dir, paths.verifier_dir, paths.artifacts_dir]
        if step is not None or separate:
            # Before each step's verifier Harbor empties /logs/verifier and /tests in the
            # agent's container, making /tests when it is not there; a separate verifier's
            # environment has /tests of its image.
            made.append(paths.tests_dir)
        harness_dirs = [str(p) for p in made]
        if fast:
            outcome = await asyncio.to_thread(
                verify_compose_service,
                task_dir,
                compose_project_name(environment.session_id),
                MAIN_SERVICE,
                self.mode,
                harness_dirs,
                step=self.step_name,
                budget=budget,
                connect=_runtime_of(kind),
            )
        else:
            outcome = await asyncio.to_thread(
                verify_environment,
                task_dir,
                environment,
                self.mode,
                harness_dirs,
                loop=asyncio.get_running_loop(),
                step=self.step_name,
                budget=budget,
            )
        # One record per step: Harbor moves nothing of the trial folder's top level.
        name = OUTCOME_FILE if step is None else f"cleanroom-outcome.{step.name}.json"
        record = Path(self.trial_paths.trial_dir) / name
        # How the verification fitted Harbor's time, beside the outcome.
        spent = {
            "allowed_s": allowed,
            "test_limit_s": budget.test_limit_s or limit,
            "control": "alongside" if budget.control_alongside else "after",
        }
        document = {**outcome.to_json(), "budget": spent, "path": "docker" if fast else "generic"}
        record.write_text(json.dumps(document, indent=2, default=str) + "\n")
        self.logger.info(
            "cleanroom: %s (%s) score=%s reason=%s",
            outcome.status.value,
            self.mode.value,
            outcome.score,
            outcome.reason.value if outcome.reason else None,
        )
        return VerifierResult(rewards=rewards_of(outcome))

    def _step(self) -> StepConfig | None:
        """The step Harbor asks this verifier to verify, in a multi-step task."""
        if self.step_name is None:
            if self.task.has_steps:
                raise ValueError("Harbor called the verifier of a multi-step task without a step")
            return None
        for step in self.task.config.steps or []:
            if step.name == self.step_name:
                return step
        raise ValueError(f"Harbor named step {self.step_name!r}, which the task does not have")

    def _harbor_budget(self, limit_s: float) -> tuple[float, float]:
        """The time Harbor allows this verifier and the base its multiplier applies to,
        as its trial computes them: the task's limit, overridden and capped by the
        trial's verifier settings and times its multiplier, read from the trial's
        ``config.json`` when Harbor wrote one (a harness that drives Harbor's classes
        itself may not: then Harbor's defaults, a multiplier of 1). ``budget_s`` wins."""
        if self.budget_s is not None:
            return self.budget_s, limit_s
        config_path = Path(self.trial_paths.trial_dir) / "config.json"
        try:
            text = config_path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return limit_s, limit_s
        config = TrialConfig.model_validate_json(text)
        base = config.verifier.override_timeout_sec or limit_s
        if config.verifier.max_timeout_sec:
            base = min(base, config.verifier.max_timeout_sec)
        multiplier = config.verifier_timeout_multiplier
        factor = multiplier if multiplier is not None else config.timeout_multiplier
        return base * factor, base
