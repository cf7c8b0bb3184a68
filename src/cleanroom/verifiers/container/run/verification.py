"""The verification both kinds of run share once the agent has acted: in the agent's
container (``shared``, ``cleared``) or apart from it (``sealed``, a separate verifier),
and the decision at the end."""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from dataclasses import replace

from cleanroom.docker_layer import ImageBuildFailed
from cleanroom.verifiers.container.decision.verdict import Evidence, Verified, judge
from cleanroom.verifiers.container.run import artifact_export
from cleanroom.verifiers.container.run.commands import run_collect_hooks
from cleanroom.verifiers.container.run.context import (
    TAIL_CHARS,
    AgentContainer,
    Resources,
    RunContext,
    SeparateVerifier,
    timed,
)
from cleanroom.verifiers.container.run.in_place import verify_in_place
from cleanroom.verifiers.container.run.recording import record_collect
from cleanroom.verifiers.container.run.sealed import StartingVerifier, verify_sealed
from cleanroom.verifiers.container.runtime import VerificationRuntime
from cleanroom.verifiers.container.task import Task
from cleanroom.verifiers.container.verify_options import VerifyOptions


def new_evidence(task: Task, label: str, options: VerifyOptions) -> Evidence:
    """The evidence a run of ``task`` starts with."""
    ev = Evidence(options.mode)
    ev.details.update(task=task.name, agent=label)
    if task.warnings:
        ev.details["task_warnings"] = [str(w) for w in task.warnings]
    return ev


def harness_error(exc: BaseException) -> str:
    """The tail of a bug of cleanroom's own, as the outcome keeps it."""
    return "".join(traceback.format_exception(exc))[-TAIL_CHARS:]


def guarded(
    task: Task,
    label: str,
    runtime: VerificationRuntime,
    options: VerifyOptions,
    run: Callable[[Resources, Evidence], Verified],
) -> Verified:
    """``run`` over fresh resources and evidence: whatever goes wrong, a bug of
    cleanroom's own included, is still an outcome (with its trace), and what the run
    made is torn down either way."""
    res = Resources(runtime, options.keep)
    ev = new_evidence(task, label, options)
    try:
        return run(res, ev)
    except Exception as exc:
        ev.harness_error = harness_error(exc)
        return judge(ev)
    finally:
        res.teardown()


def with_separate_image(ctx: RunContext, res: Resources, ev: Evidence) -> RunContext | None:
    """The context with a separate verifier's image made or found (unchanged for a task
    without one); None, with why in the evidence, when it cannot be made."""
    found = ctx.separate_environment
    if found is None:
        return ctx
    try:
        with timed(ev, "build_s"):
            image, built = res.rt.images.for_verifier(ctx.task, dict(ctx.options.image_map))
    except ImageBuildFailed as exc:
        ev.environment_error = f"the verifier's image {exc.tag} could not be made"
        ev.build_log = exc.log
        return None
    ev.details["verifier_image"] = {
        "image": image,
        "built": built,
        "tests": "in the image" if found.bundled_tests else "copied in",
    }
    own = found.config.workdir
    workdir = own if own is not None else res.rt.images.workdir(image)
    return replace(ctx, separate=SeparateVerifier(found, image, workdir))


def verify_agent_container(
    ctx: RunContext,
    res: Resources,
    ev: Evidence,
    agent: AgentContainer,
    image: str,
    starting: StartingVerifier | None,
) -> None:
    """The verification both kinds of run share, once the agent has acted in ``agent``.

    A separate verifier runs the sealed way in every mode, as Harbor runs it: the
    agent's container is stopped and test.sh runs in a fresh container of the
    verifier's image, which gets the agent's artifacts and nothing else of it.
    """
    verify_start = time.monotonic()
    if ctx.separate is not None:
        verify_sealed(ctx, res, ev, agent, ctx.separate.image, starting)
    elif ctx.plan.in_agent_container:
        # Harbor collects the artifacts before its verifier runs.
        with timed(ev, "artifacts_s"):
            taken = artifact_export.take(ctx, res.rt, agent.id, carried=False)
            taken.close()
            ev.details.update(taken.details)
        # Harbor's shared verifier: the services' hooks run while main still runs.
        record_collect(ev, *run_collect_hooks(ctx, res.rt, agent.id, res.services, in_main=False))
        verify_in_place(ctx, res.rt, ev, agent.id)
    else:
        verify_sealed(ctx, res, ev, agent, image, starting)
    ev.verify_s = time.monotonic() - verify_start
    ev.timings["verify_s"] = ev.verify_s
    ev.finished = True


def decide_run(res: Resources, ev: Evidence, started: float) -> Verified:
    """The run's outcome and facts, its timings and what it kept in the details."""
    ev.timings["total_s"] = time.monotonic() - started
    if res.keep:
        ev.details["kept"] = res.kept()
    return judge(ev)
