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
it through the daemon's API (`container.verify_compose_service`). Every other environment
type goes through Harbor's own environment interface (`environment.verify_generic`, on
the runtime `verifiers.container.runtime.harbor`): ``exec``, uploads, downloads and fresh
environments from the same class. ``--verifier-kwarg
path=generic`` takes that path on docker and podman too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harbor.models.trial.config import TrialConfig
from harbor.models.verifier.result import VerifierResult
from harbor.verifier.base import BaseVerifier

from cleanroom.core.errors import (
    BudgetTooShortError,
    InvalidOutcomeError,
    VerifierUnavailableError,
)
from cleanroom.integrations.environment import (
    PATHS,
    compose_project_name,
    verify_environment_async,
)
from cleanroom.integrations.rewards import rewards_of
from cleanroom.verifiers.container.modes import Mode

# Written into the trial folder (not a folder bound into the agent's container).
OUTCOME_FILE = "cleanroom-outcome.json"
# What a refused budget tells a Harbor user to change.
HARBOR_BUDGET_HOW = "run harbor with --verifier-timeout-multiplier {} (or more)"

__all__ = [
    "BudgetTooShortError",
    "InvalidOutcomeError",
    "SealedVerifier",
    "VerifierUnavailableError",
    "compose_project_name",
]


class SealedVerifier(BaseVerifier):
    """Harbor's verifier hook running cleanroom's verification (``sealed`` by default;
    ``--verifier-kwarg mode=cleared`` or ``shared`` for comparison).

    ``budget_s`` is the time the harness allows the verifier, for a harness that drives
    Harbor's classes with its own limit; by default it is the limit Harbor's own trial
    computes (from the trial's ``config.json`` when there is one, else the task's).
    ``path`` picks how the agent's environment is reached (`environment.PATHS`): ``auto``
    takes the Docker fast path for Harbor's docker and podman environments and the
    generic path for every other type."""

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
        step = self._step_config()
        limit = float(
            (step.verifier if step is not None else self.task.config.verifier).timeout_sec
        )
        allowed, base = self._harbor_budget(limit)
        outcome = await verify_environment_async(
            Path(self.task.paths.task_dir),
            self.environment,
            mode=self.mode,
            step=self.step_name,
            budget_s=allowed,
            path=self.path,
            budget_how=HARBOR_BUDGET_HOW,
            budget_base_s=base,
        )
        # One record per step: Harbor moves nothing of the trial folder's top level.
        name = OUTCOME_FILE if step is None else f"cleanroom-outcome.{step.name}.json"
        record = Path(self.trial_paths.trial_dir) / name
        document = {
            **outcome.to_json(),
            "budget": outcome.details.get("budget"),
            "path": outcome.details.get("path"),
        }
        record.write_text(json.dumps(document, indent=2, default=str) + "\n")
        self.logger.info(
            "cleanroom: %s (%s) score=%s reason=%s",
            outcome.status.value,
            self.mode.value,
            outcome.score,
            outcome.reason.value if outcome.reason else None,
        )
        return VerifierResult(rewards=rewards_of(outcome))

    def _step_config(self) -> Any:
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
