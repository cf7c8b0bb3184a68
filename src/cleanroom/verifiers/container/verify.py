"""One rollout end to end: image, agent phase, then verification in the chosen mode.

The entry points: `verify_path` (a task folder), `verify_task` (a loaded task, in a
rollout of cleanroom's own, `rollout.Rollout`) and `verify_acted_on` (a container
another harness started, `existing_container.ExistingContainer`), each with sealed's
pristine control. Whatever goes wrong on the way, including a bug of cleanroom's own,
ends as an outcome with a reason, never as a traceback.
"""

from __future__ import annotations

import contextlib
import traceback
from collections.abc import Callable
from pathlib import Path

from cleanroom.core.outcomes import Outcome
from cleanroom.verifiers.container.existing_container import ActedOn, ExistingContainer
from cleanroom.verifiers.container.modes import Mode
from cleanroom.verifiers.container.rollout import Rollout
from cleanroom.verifiers.container.runtime import RuntimeUnavailable, VerificationRuntime
from cleanroom.verifiers.container.runtime.docker import DockerRuntime
from cleanroom.verifiers.container.task import (
    Task,
    TaskError,
    TaskStep,
    load_task,
)
from cleanroom.verifiers.container.verdict import (
    Evidence,
    blame_state,
    decide,
    needs_pristine_control,
)
from cleanroom.verifiers.container.verification import TAIL_CHARS, Verification
from cleanroom.verifiers.container.verify_options import AgentSpec, VerifyOptions

__all__ = [
    "ActedOn",
    "AgentSpec",
    "VerifyOptions",
    "load_into",
    "verify_acted_on",
    "verify_path",
    "verify_task",
]


def load_into(ev: Evidence, task_dir: Path) -> Task | None:
    """The task in ``task_dir``; None, with what is wrong with it in ``ev``, when it
    cannot be loaded."""
    try:
        return load_task(task_dir)
    except TaskError as exc:
        ev.environment_error = str(exc)
    except Exception as exc:  # a task file no parser expected: still an outcome
        ev.environment_error = f"the task folder could not be read: {exc!r}"
    return None


def verify_path(
    task_dir: Path,
    agent: AgentSpec,
    options: VerifyOptions,
    connect: Callable[[], DockerRuntime] = DockerRuntime.connect,
) -> Outcome:
    """Load the task folder, connect to Docker, and verify; every failure is an outcome."""
    ev = Evidence(options.mode, details={"task": str(task_dir), "agent": agent.label})
    task = load_into(ev, task_dir)
    if task is None:
        return decide(ev)
    try:
        runtime = connect()
    except RuntimeUnavailable as exc:
        ev.unavailable = str(exc)
        return decide(ev)
    return verify_task(task, agent, runtime, options)


def verify_task(
    task: Task, agent: AgentSpec, runtime: VerificationRuntime, options: VerifyOptions
) -> Outcome:
    """Build or reuse the task's image, run the agent phase, verify, and decide.

    In `sealed`, a verifier that fails on the agent's state in a way that state may have
    caused (over time, a junk reward, a failed setup command) runs again on the pristine
    state, as a no-op agent leaves it: the failure is the agent's 0 when the pristine run
    is clean (`verdict.blame_state`). An agent cannot make itself invalid that way.
    """
    outcome = _verify_once(task, agent, runtime, options)
    if options.mode is not Mode.SEALED or agent.kind == "noop":
        return outcome
    if not needs_pristine_control(outcome):
        return outcome
    control_options = VerifyOptions(options.mode, image_map=options.image_map)
    step = _failed_step(task, outcome)
    control = _guarded(Rollout(task, AgentSpec.noop(), runtime, control_options, only_step=step))
    return blame_state(outcome, control, _verifier_limit(task, step))


def _failed_step(task: Task, outcome: Outcome) -> TaskStep | None:
    """The step whose verification ended a multi-step rollout (or the one step another
    harness had verified), or None for a task without steps."""
    name = outcome.details.get("ended_at_step") or outcome.details.get("step")
    return next((step for step in task.steps if step.name == name), None)


def _verifier_limit(task: Task, step: TaskStep | None) -> float:
    return step.config.verifier.timeout_sec if step else task.config.verifier.timeout_sec


def verify_acted_on(
    task: Task, acted: ActedOn, runtime: VerificationRuntime, options: VerifyOptions
) -> Outcome:
    """Verify a container someone else started and the agent already acted in.

    The same verification `verify_task` runs after its own agent phase, with the same
    pristine control in `sealed`. The container is left to its owner: frozen or killed
    (as the mode needs), never removed.
    """
    outcome = _guarded(ExistingContainer(task, acted, runtime, options))
    if options.mode is not Mode.SEALED or not needs_pristine_control(outcome):
        return outcome
    # The control runs on the very image the agent's container was started from.
    step = _failed_step(task, outcome)
    noop = Rollout(
        task, AgentSpec.noop(), runtime, VerifyOptions(options.mode), acted.image, only_step=step
    )
    control = _guarded(noop)
    return blame_state(outcome, control, _verifier_limit(task, step))


def _verify_once(
    task: Task, agent: AgentSpec, runtime: VerificationRuntime, options: VerifyOptions
) -> Outcome:
    return _guarded(Rollout(task, agent, runtime, options))


def _guarded(run: Verification) -> Outcome:
    try:
        return run.execute()
    except Exception as exc:  # a bug of cleanroom's own: still an outcome, with its trace
        run.ev.harness_error = "".join(traceback.format_exception(exc))[-TAIL_CHARS:]
        return decide(run.ev)
    finally:
        with contextlib.suppress(Exception):
            run.teardown()
