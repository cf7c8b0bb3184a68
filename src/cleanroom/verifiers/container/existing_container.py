"""Verifying a container another harness started and the agent already acted in
(Harbor's), as `ActedOn` describes it."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from cleanroom.core.outcomes import Outcome
from cleanroom.verifiers.container.runtime import RuntimeUnavailable, VerificationRuntime
from cleanroom.verifiers.container.sidecars import SidecarGroup
from cleanroom.verifiers.container.tamper import (
    Change,
)
from cleanroom.verifiers.container.task import (
    Task,
)
from cleanroom.verifiers.container.verification import Verification
from cleanroom.verifiers.container.verify_options import VerifyOptions


@dataclass(frozen=True)
class ActedOn:
    """A container an agent has already acted in, started by another harness (Harbor).

    ``image`` is the image it was started from, the pristine state the sealed verifier
    runs on. ``reward_dir`` is the host folder bound at the task's reward folder, watched
    for what the agent planted there; ``baseline`` is what that harness changed in the
    container before the agent started (its mount points). ``step`` names the step of a
    multi-step task the agent just did: that step is verified, and unless it is the last
    the container is left running for the next (frozen only while its state is read).
    """

    container: str
    image: str
    reward_dir: Path | None = None
    baseline: tuple[Change, ...] = ()
    label: str = "agent"
    step: str | None = None
    # The task's compose services that harness started beside it: container by name.
    services: tuple[tuple[str, str], ...] = ()


class ExistingContainer(Verification):
    """A container another harness started and the agent acted in (`ActedOn`), after the
    agent's one phase or, in a multi-step task, after one step's."""

    owns_agent_container = False

    def __init__(
        self, task: Task, acted: ActedOn, runtime: VerificationRuntime, options: VerifyOptions
    ) -> None:
        super().__init__(task, acted.label, runtime, options)
        self.acted = acted
        self.agent_reward_dir = acted.reward_dir
        self.baseline = list(acted.baseline)

    def execute(self) -> Outcome:
        started = time.monotonic()
        try:
            if not self._resolve_env():
                return self._decide(started)
            self.ev.details.update(image=self.acted.image, container=self.acted.container)
            if not self._enter_step():
                return self._decide(started)
            if self.workdir is None:
                self.workdir = self.rt.images.workdir(self.acted.image)
            if not self._verifier_image():
                return self._decide(started)
            compose = self.task.compose
            sealed_apart = self.plan.freezes_agent and not self.vcfg.live_processes
            if compose is not None and self.acted.services and sealed_apart and not self.separate:
                # The sealed verifier reaches that harness's services by name, on a
                # network of its own (theirs may lead out), as in cleanroom's rollouts.
                self.services = SidecarGroup.of_another_harness(self.rt, compose, self.task.name)
                self.services.join(dict(self.acted.services))
                self.ev.details["services"] = sorted(self.services.containers)
            self._verify_agent_container(self.acted.container, self.acted.image)
        except RuntimeUnavailable as exc:
            self.ev.unavailable = str(exc)
        return self._decide(started)

    def _enter_step(self) -> bool:
        """Verify the step the harness names; False, with why in the evidence, when a
        step is named that the task lacks or none is named in a multi-step task."""
        name = self.acted.step
        if name is None and not self.task.steps:
            return True
        step = next((s for s in self.task.steps if s.name == name), None)
        if step is None:
            known = ", ".join(repr(s.name) for s in self.task.steps) or "none"
            asked = f"step {name!r}" if name is not None else "no step"
            self.ev.environment_error = (
                f"{self.task.name}: the harness asked to verify {asked}; the task's steps "
                f"are {known}"
            )
            return False
        self.ev.details["step"] = step.name
        self.step = step
        self.more_steps = step is not self.task.steps[-1]
        vcfg = self._step_verifier(step)
        if vcfg is None:
            return False
        self.vcfg = vcfg
        return True
