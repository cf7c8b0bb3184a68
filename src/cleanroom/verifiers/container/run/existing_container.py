"""Verifying a container another harness started and the agent already acted in
(Harbor's), as `ActedOn` describes it."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path

from cleanroom.verifiers.container.decision.tamper import Change
from cleanroom.verifiers.container.decision.verdict import Evidence, Verified
from cleanroom.verifiers.container.run.capability_check import acted_on_uses_services
from cleanroom.verifiers.container.run.context import (
    AgentContainer,
    Resources,
    RunContext,
    for_step,
    new_context,
)
from cleanroom.verifiers.container.run.sidecars import SidecarGroup
from cleanroom.verifiers.container.run.verification import (
    decide_run,
    guarded,
    verify_agent_container,
    with_separate_image,
)
from cleanroom.verifiers.container.runtime import RuntimeUnavailable, VerificationRuntime
from cleanroom.verifiers.container.task import Task
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


def verify_existing_container(
    task: Task, acted: ActedOn, runtime: VerificationRuntime, options: VerifyOptions
) -> Verified:
    """Verify the container ``acted`` names, after the agent's one phase or, in a
    multi-step task, after one step's. The container is left to its owner: frozen or
    killed (as the mode needs), never removed; whatever goes wrong is an outcome."""
    return guarded(
        task, acted.label, runtime, options, lambda res, ev: _verify(task, acted, options, res, ev)
    )


def _verify(
    task: Task, acted: ActedOn, options: VerifyOptions, res: Resources, ev: Evidence
) -> Verified:
    started = time.monotonic()
    try:
        made = new_context(task, acted.label, options, owns_agent_container=False)
        if isinstance(made, str):
            ev.environment_error = made
            return decide_run(res, ev, started)
        ev.details.update(image=acted.image, container=acted.container)
        stepped = _enter_step(made, ev, acted.step)
        if stepped is None:
            return decide_run(res, ev, started)
        if stepped.workdir is None:
            stepped = replace(stepped, workdir=res.rt.images.workdir(acted.image))
        ctx = with_separate_image(stepped, res, ev)
        if ctx is None:
            return decide_run(res, ev, started)
        compose = task.compose
        if compose is not None and acted_on_uses_services(task, options, bool(acted.services)):
            # The sealed verifier reaches that harness's services by name, on a network
            # of its own (theirs may lead out), as in cleanroom's rollouts.
            res.services = SidecarGroup.of_another_harness(res.rt, compose, task.name)
            res.services.join(dict(acted.services))
            ev.details["services"] = sorted(res.services.containers)
        agent = AgentContainer(acted.container, acted.image, acted.reward_dir, acted.baseline)
        verify_agent_container(ctx, res, ev, agent, acted.image, None)
    except RuntimeUnavailable as exc:
        ev.unavailable = str(exc)
    return decide_run(res, ev, started)


def _enter_step(ctx: RunContext, ev: Evidence, name: str | None) -> RunContext | None:
    """The context for the step the harness names; None, with why in the evidence,
    when a step is named that the task lacks or none is named in a multi-step task."""
    task = ctx.task
    if name is None and not task.steps:
        return ctx
    step = next((s for s in task.steps if s.name == name), None)
    if step is None:
        known = ", ".join(repr(s.name) for s in task.steps) or "none"
        asked = f"step {name!r}" if name is not None else "no step"
        ev.environment_error = (
            f"{task.name}: the harness asked to verify {asked}; the task's steps are {known}"
        )
        return None
    ev.details["step"] = step.name
    ev.step = step.name
    stepped = for_step(ctx, step, step is not task.steps[-1])
    if isinstance(stepped, str):
        ev.environment_error = stepped
        return None
    return stepped
