"""cleanroom's own rollout: the task's image, its compose services, an agent container,
the agent phase, then the verification in the rollout's mode.

A multi-step task runs its steps in order in the one agent container, as Harbor does:
each step's agent phase, then its verification in the rollout's mode; the container
goes on to the next step as that left it (`steps` makes the score). ``only_step`` runs
that step alone, the pristine control of a step: with no agent, the steps before it
change nothing the sealed verifier reads.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from cleanroom.docker_layer import ImageBuildFailed
from cleanroom.verifiers.container.decision.multi_step import StepOutcome, combine, next_step_runs
from cleanroom.verifiers.container.decision.tamper import Change, ChangeKind
from cleanroom.verifiers.container.decision.verdict import Evidence, Verified
from cleanroom.verifiers.container.run import name_files
from cleanroom.verifiers.container.run.commands import check_health, run_collect_hooks
from cleanroom.verifiers.container.run.context import (
    AGENT_FILES_DIR,
    TESTS_DIR,
    AgentContainer,
    Resources,
    RunContext,
    for_step,
    new_context,
    output_tail,
    timed,
)
from cleanroom.verifiers.container.run.recording import record_collect
from cleanroom.verifiers.container.run.sealed import StartingVerifier, Unhealthy, start_verifier
from cleanroom.verifiers.container.run.sidecars import ServiceFailed, SidecarGroup
from cleanroom.verifiers.container.run.verification import (
    decide_run,
    guarded,
    harness_error,
    verify_agent_container,
    with_separate_image,
)
from cleanroom.verifiers.container.runtime import (
    AgentContainerSpec,
    RuntimeUnavailable,
    VerificationRuntime,
)
from cleanroom.verifiers.container.task import ARTIFACTS_DIR, Task, TaskStep
from cleanroom.verifiers.container.verify_options import AgentSpec, VerifyOptions

# What the rollout saw before its first step, kept in its combined details.
_COMMON_DETAILS = (
    "task",
    "agent",
    "image",
    "image_built",
    "task_warnings",
    "healthcheck",
    "services",
)


def run_rollout(
    task: Task,
    agent: AgentSpec,
    runtime: VerificationRuntime,
    options: VerifyOptions,
    image: str | None = None,
    only_step: TaskStep | None = None,
) -> Verified:
    """One rollout of ``agent`` on ``task`` (on ``image`` when one is given, else the
    task's, built or reused), verified; whatever goes wrong, including a bug of
    cleanroom's own, is an outcome. Everything it made is removed at the end."""
    return guarded(
        task,
        agent.label,
        runtime,
        options,
        lambda res, ev: _rollout(task, agent, options, res, ev, image, only_step),
    )


def _rollout(
    task: Task,
    agent: AgentSpec,
    options: VerifyOptions,
    res: Resources,
    ev: Evidence,
    given_image: str | None,
    only_step: TaskStep | None,
) -> Verified:
    started = time.monotonic()
    made = new_context(task, agent.label, options, owns_agent_container=True)
    if isinstance(made, str):
        ev.environment_error = made
        return decide_run(res, ev, started)
    try:
        with timed(ev, "build_s"):
            image = _image(made, res, ev, given_image)
            service_images = _service_images(made, res, ev) if image is not None else None
        if image is None or service_images is None:
            return decide_run(res, ev, started)
        if made.workdir is None:
            made = replace(made, workdir=res.rt.images.workdir(image))
        ctx = with_separate_image(made, res, ev)
        if ctx is None:
            return decide_run(res, ev, started)
        if service_images:
            with timed(ev, "services_s"):
                _start_services(ctx, res, ev, service_images)
        early = None
        if not task.steps and ctx.verifies_apart and not ctx.verifier.live_processes:
            # A verifier that talks to no process of the agent's starts beside the
            # agent's container: its start is the longest wait of a verification.
            early = start_verifier(ctx, res, ev, None, _verifier_image(ctx, image))
        agent_ctr = _start_agent_container(ctx, res, image)
        check = task.config.environment.healthcheck
        if check is not None:
            with timed(ev, "healthcheck_s"):
                health = check_health(res.rt, agent_ctr.id, check, ctx.workdir, "agent")
            ev.details.setdefault("healthcheck", []).append(health.record)
            if health.failed:
                ev.environment_error = f"before the agent phase, {health.failed}"
                return decide_run(res, ev, started)
        if task.steps:
            return _run_steps(ctx, res, ev, agent, agent_ctr, only_step, started)
        _act_and_verify(ctx, res, ev, agent, agent_ctr, early)
    except RuntimeUnavailable as exc:
        ev.unavailable = str(exc)
    except (Unhealthy, ServiceFailed) as exc:
        ev.environment_error = str(exc)
    return decide_run(res, ev, started)


def _verifier_image(ctx: RunContext, image: str) -> str:
    """The image test.sh runs in apart from the agent: a separate verifier's, or the
    task's own."""
    return ctx.separate.image if ctx.separate is not None else image


def _image(ctx: RunContext, res: Resources, ev: Evidence, given: str | None) -> str | None:
    """The task's image (``given``, or built or reused); None, with why in the
    evidence, when it cannot be made."""
    try:
        if given is not None:
            image, built = given, False
        else:
            image, built = res.rt.images.for_task(ctx.task, dict(ctx.options.image_map))
    except ImageBuildFailed as exc:
        ev.environment_error = f"the task image {exc.tag} could not be made"
        ev.build_log = exc.log
        return None
    ev.details.update(image=image, image_built=built)
    return image


def _service_images(ctx: RunContext, res: Resources, ev: Evidence) -> dict[str, str] | None:
    """Each compose service's image, built or found; None (the failure in the evidence)
    when one cannot be made."""
    compose = ctx.task.compose
    if compose is None:
        return {}
    images: dict[str, str] = {}
    for service in compose.services:
        try:
            images[service.name] = res.rt.images.for_service(
                ctx.task, service, dict(ctx.options.image_map)
            )
        except ImageBuildFailed as exc:
            ev.environment_error = (
                f"the image of compose service {service.name!r} ({exc.tag}) could not be made"
            )
            ev.build_log = exc.log
            return None
    return images


def _start_services(ctx: RunContext, res: Resources, ev: Evidence, images: dict[str, str]) -> None:
    """Start the compose services and wait until they are ready, as ``docker compose
    up --wait`` does before Harbor starts the agent."""
    assert ctx.task.compose is not None
    res.services = SidecarGroup(res.rt, ctx.task.compose, ctx.task.name)
    limit = ctx.task.config.environment.build_timeout_sec
    res.services.start(images, ctx.limits.network, limit)
    res.services.wait_for_main(limit)
    ev.details["services"] = sorted(res.services.containers)


def _start_agent_container(ctx: RunContext, res: Resources, image: str) -> AgentContainer:
    rt, vcfg = res.rt, ctx.verifier
    binds: dict[Path, str] = {}
    reward_dir = None
    if ctx.plan.freezes_agent:
        # The agent's own reward folder is a host folder, watched from the host: what the
        # agent leaves there is an attempt at forging, found without an exec.
        reward_dir = res.workspace() / "agent-verifier"
        reward_dir.mkdir()
        reward_dir.chmod(0o777)
        binds[reward_dir] = vcfg.reward_dir
    # The reward and log folders start empty, whatever the image holds there: what is
    # found in them afterwards is the agent's (Harbor mounts host folders there).
    hidden = sorted({vcfg.reward_dir, "/logs/verifier", "/logs/agent", ARTIFACTS_DIR})
    # Where the reward is read in this container, /logs is a volume: the runtime's
    # files, which read it, do not see a tmpfs.
    ctr = rt.containers.start_agent(
        AgentContainerSpec(
            image,
            ctx.limits,
            ctx.workdir,
            ctx.task.name,
            binds,
            ctx.envs.task,
            hidden,
            logs_on_volume=not ctx.plan.freezes_agent,
            services_network=res.services.network if res.services else None,
        )
    )
    res.containers.append(ctr)
    # Harbor gives the agent a world-writable /logs/verifier; the naive modes need the
    # same so that the attacks they control for are real.
    dirs = sorted({"/logs", vcfg.reward_dir, "/logs/agent", ARTIFACTS_DIR})
    made = rt.containers.exec(
        ctr, ["sh", "-c", 'mkdir -p "$@" && chmod 0777 "$@"', "mkdirs", *dirs], user="0"
    )
    if made.exit_code != 0:
        raise RuntimeUnavailable(f"preparing {dirs} failed: {output_tail(made.output)}")
    baseline: tuple[Change, ...] = ()
    if ctx.plan.freezes_agent:
        # The reward folder is a bind mount: Docker makes its mount point in the
        # container's own layer whenever it copies files in (the solution), so it is the
        # harness's change, not the agent's.
        mount_points = (
            Change(vcfg.reward_dir, ChangeKind.ADDED),
            Change(ARTIFACTS_DIR, ChangeKind.ADDED),
        )
        baseline = (*rt.state.changes(ctr).changes, *mount_points)
    # A verifier that joins the agent's network namespace gets these, as they are before
    # the agent acts, in place of the agent's own (`sealed.live_name_files`).
    names = name_files.take(rt, ctr) if ctx.verifier.live_processes else None
    return AgentContainer(ctr, image, reward_dir, baseline, names)


def _run_steps(
    ctx: RunContext,
    res: Resources,
    ev: Evidence,
    agent: AgentSpec,
    agent_ctr: AgentContainer,
    only_step: TaskStep | None,
    started: float,
) -> Verified:
    """Each step's agent phase and verification, in order, until one ends the run."""
    steps = [only_step] if only_step is not None else list(ctx.task.steps)
    common = {k: v for k, v in ev.details.items() if k in _COMMON_DETAILS}
    done: list[StepOutcome] = []
    for index, step in enumerate(steps):
        more_steps = index < len(steps) - 1
        result = StepOutcome(step.config, _run_step(ctx, res, agent, step, more_steps, agent_ctr))
        done.append(result)
        if not next_step_runs(result):
            break
        if more_steps and ctx.plan.in_agent_container:
            failed = _reset_verifier_places(ctx, res, agent_ctr.id)
            if failed:
                common.setdefault("reset_failed", []).append({"after": step.name, "output": failed})
    if only_step is not None:
        return done[0].verified
    details = {**common, "mode": ctx.options.mode.value}
    details["timings"] = {"total_s": round(time.monotonic() - started, 4)}
    return combine(done, ctx.task.config.reward_strategy, len(steps), details)


def _run_step(
    ctx: RunContext,
    res: Resources,
    agent: AgentSpec,
    step: TaskStep,
    more_steps: bool,
    agent_ctr: AgentContainer,
) -> Verified:
    """One step, recorded in an `Evidence` of its own and decided alone."""
    started = time.monotonic()
    ev = Evidence(ctx.options.mode, step=step.name)
    ev.details.update(task=ctx.task.name, agent=agent.label, step=step.name)
    ev.details["image"] = agent_ctr.image
    try:
        step_ctx = for_step(ctx, step, more_steps)
        if isinstance(step_ctx, str):
            ev.environment_error = step_ctx
            return decide_run(res, ev, started)
        _act_and_verify(step_ctx, res, ev, agent, agent_ctr, None)
    except RuntimeUnavailable as exc:
        ev.unavailable = str(exc)
    except Unhealthy as exc:
        ev.environment_error = str(exc)
    except Exception as exc:  # a bug of cleanroom's own: this step's outcome says so
        ev.harness_error = harness_error(exc)
    return decide_run(res, ev, started)


def _reset_verifier_places(ctx: RunContext, res: Resources, ctr: str) -> str:
    """Empty ``/tests`` and the reward folder a verifier used in the agent's container
    before the next step's agent phase, as Harbor does: the next step's agent sees no
    tests, and its verifier no earlier reward. What failed, or "" (the agent may have
    made them unremovable; its next verification finds that)."""
    script = 'rm -rf -- "$1" && mkdir -p "$2" && find "$2" -mindepth 1 -delete'
    done = res.rt.containers.exec(
        ctr, ["sh", "-c", script, "reset", TESTS_DIR, ctx.verifier.reward_dir], user="0"
    )
    return "" if done.exit_code == 0 else output_tail(done.output, 300)


def _act_and_verify(
    ctx: RunContext,
    res: Resources,
    ev: Evidence,
    agent: AgentSpec,
    agent_ctr: AgentContainer,
    early: StartingVerifier | None,
) -> None:
    """The agent phase, Harbor's collect hooks for main (before main is stopped, and in
    each step's collection of a multi-step task), then the verification."""
    if ctx.verifies_apart and early is None:
        image = _verifier_image(ctx, agent_ctr.image)
        early = start_verifier(ctx, res, ev, agent_ctr, image)
    with timed(ev, "agent_s"):
        ev.details["agent_phase"] = _agent_phase(ctx, res, agent, agent_ctr.id)
    if agent_ctr.name_files is not None:
        ev.name_files_changed = name_files.changed(res.rt, agent_ctr.id, agent_ctr.name_files)
    record_collect(ev, *run_collect_hooks(ctx, res.rt, agent_ctr.id, res.services, in_main=True))
    verify_agent_container(ctx, res, ev, agent_ctr, agent_ctr.image, early)


def _agent_phase(ctx: RunContext, res: Resources, agent: AgentSpec, ctr: str) -> dict[str, Any]:
    argv = _agent_argv(ctx, res, agent, ctr)
    if argv is None:
        return {"ran": False}
    task_agent = ctx.task.config.agent
    own = ctx.step.config.agent if ctx.step is not None else None
    result = res.rt.containers.exec(
        ctr,
        argv,
        user=own.user if own is not None and own.user is not None else task_agent.user,
        env=ctx.envs.solution if agent.runs_solution else None,
        workdir=ctx.workdir,
        timeout=own.timeout_sec if own is not None and own.timeout_sec else task_agent.timeout_sec,
    )
    return {
        "exit_code": result.exit_code,
        "timed_out": result.timed_out,
        "seconds": round(result.seconds, 3),
        "output_tail": output_tail(result.output),
    }


def _agent_argv(ctx: RunContext, res: Resources, agent: AgentSpec, ctr: str) -> list[str] | None:
    if agent.kind == "noop":
        return None
    step = ctx.step
    if agent.runs_solution:
        solution = step.solution_dir if step is not None else ctx.task.solution_dir
        if not (solution / "solve.sh").is_file():
            where = f"step {step.name!r}" if step is not None else ctx.task.name
            raise RuntimeUnavailable(f"{where} has no solution/solve.sh")
        res.rt.containers.put_dir(ctr, solution, "/solution")
    if agent.kind == "solution":
        return ["bash", "/solution/solve.sh"]
    if agent.files:
        folder = res.workspace() / "agent-files"
        folder.mkdir(exist_ok=True)
        for name, data in agent.files:
            (folder / name).write_bytes(data)
        res.rt.containers.put_dir(ctr, folder, AGENT_FILES_DIR)
    return ["bash", "-c", agent.text]
