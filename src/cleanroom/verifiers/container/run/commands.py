"""The commands a verification runs, in whichever container: the task's readiness check,
Harbor's collect hooks, the verifier's setup commands and test.sh; and the result files
it reads back. Each returns what happened; the caller records it."""

from __future__ import annotations

import json
import posixpath
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cleanroom.core.observed_file import FileKind, ObservedFile
from cleanroom.exec_result import ExecResult
from cleanroom.host_files import read_capped
from cleanroom.verifiers.container.decision.reward import REWARD_CAP_BYTES
from cleanroom.verifiers.container.run.context import (
    PYTHON_GUARD_DIR,
    TEST_SCRIPT,
    TESTS_DIR,
    WITNESS_DIR,
    RunContext,
    output_tail,
)
from cleanroom.verifiers.container.run.healthcheck import Attempt, wait_healthy
from cleanroom.verifiers.container.run.sidecars import SidecarGroup
from cleanroom.verifiers.container.runtime import RuntimeUnavailable, VerificationRuntime
from cleanroom.verifiers.container.task import HealthcheckConfig
from cleanroom.verifiers.container.task.compose_model import MAIN

RESULT_CAP_BYTES = 1 << 20


@dataclass(frozen=True)
class Health:
    """A readiness check's end: what failed (None when healthy), and its record."""

    failed: str | None
    record: dict[str, Any]


def check_health(
    rt: VerificationRuntime,
    ctr: str,
    check: HealthcheckConfig,
    workdir: str | None,
    where: str,
) -> Health:
    """Wait for a healthcheck in ``ctr`` (the ``agent``'s or the ``verifier``'s
    container, as the record names it)."""

    def attempt(timeout: float) -> Attempt:
        result = rt.containers.exec(
            ctr, ["bash", "-c", check.command], workdir=workdir, timeout=timeout
        )
        if result.timed_out:
            return Attempt(False, f"over its {timeout:g} s timeout")
        return Attempt(
            result.exit_code == 0, f"exit {result.exit_code}: {output_tail(result.output, 300)}"
        )

    health = wait_healthy(check, attempt)
    record = {"container": where, "healthy": health.healthy, "attempts": health.attempts}
    return Health(None if health.healthy else health.describe(check.command), record)


def run_collect_hooks(
    ctx: RunContext,
    rt: VerificationRuntime,
    agent_ctr: str,
    services: SidecarGroup | None,
    *,
    in_main: bool,
) -> tuple[list[dict[str, Any]], float]:
    """Run the task's collect hooks for ``main`` (``in_main``) or for its other services,
    as Harbor does: best effort, a failure never stopping the rollout. Returns each
    one's end and the seconds they took; a daemon that does not answer still raises."""
    ended: list[dict[str, Any]] = []
    seconds = 0.0
    for hook in ctx.collect_hooks:
        if (hook.service == MAIN) != in_main:
            continue
        if in_main:
            ctr, argv, workdir = agent_ctr, ["bash", "-c", hook.command], ctx.workdir
        else:
            assert services is not None  # load_task checked the hook's service
            ctr = services.containers[hook.service]
            argv, workdir = ["sh", "-c", hook.command], None
        entry: dict[str, Any] = {"service": hook.service, "command": hook.command}
        started = time.monotonic()
        try:
            try:
                result = rt.containers.exec(
                    ctr, argv, user=hook.user, workdir=workdir, timeout=hook.timeout_sec
                )
            finally:
                seconds += time.monotonic() - started
        except RuntimeUnavailable as exc:
            if exc.status is None:
                raise
            entry["error"] = str(exc)[-500:]  # the daemon refused: a stopped container
        else:
            entry.update(
                exit_code=result.exit_code,
                timed_out=result.timed_out,
                output_tail=output_tail(result.output, 500),
            )
        ended.append(entry)
    return ended, seconds


@dataclass(frozen=True)
class SetupRun:
    """How the verifier's setup commands ended: ``failure`` names the one that failed,
    ``timed_out`` the one still running at the limit."""

    seconds: float
    failure: str | None = None
    timed_out: str | None = None

    @property
    def ok(self) -> bool:
        return self.failure is None and self.timed_out is None


@dataclass(frozen=True)
class TestRun:
    """How test.sh ended; ``ended_ns`` is the wall clock when it returned (file times
    use it), ``timed_out`` what was still running at the limit."""

    seconds: float
    exit_code: int | None
    output_tail: str
    timed_out: str | None
    ended_ns: int


def run_setup(
    ctx: RunContext, rt: VerificationRuntime, ctr: str, deadline: float, agent_paths: list[str]
) -> SetupRun:
    """The verifier's setup commands, in order, as the verifier's user, before
    ``deadline``; ``agent_paths`` are what the sealed verifier got of the agent's."""
    env = verifier_env(ctx, agent_paths)
    started = time.monotonic()
    for n, command in enumerate(ctx.verifier.setup_commands, start=1):
        result = _as_verifier(ctx, rt, ctr, ["bash", "-c", command], env, deadline)
        if result.timed_out:
            timed_out = ctx.over_time(f"setup command {n}")
            return SetupRun(time.monotonic() - started, timed_out=timed_out)
        if result.exit_code != 0:
            failure = (
                f"verifier setup command {n} exited {result.exit_code}: "
                f"{output_tail(result.output, 500)}"
            )
            return SetupRun(time.monotonic() - started, failure=failure)
    return SetupRun(time.monotonic() - started)


def run_test(
    ctx: RunContext, rt: VerificationRuntime, ctr: str, deadline: float, agent_paths: list[str]
) -> TestRun:
    """test.sh, as the verifier's user, before ``deadline``."""
    env = verifier_env(ctx, agent_paths)
    started = time.monotonic()
    result = _as_verifier(ctx, rt, ctr, ["bash", TEST_SCRIPT], env, deadline)
    seconds = time.monotonic() - started
    return TestRun(
        seconds,
        result.exit_code,
        output_tail(result.output),
        ctx.over_time("test.sh") if result.timed_out else None,
        time.time_ns(),
    )


def _as_verifier(
    ctx: RunContext,
    rt: VerificationRuntime,
    ctr: str,
    argv: list[str],
    env: dict[str, str],
    deadline: float,
) -> ExecResult:
    return rt.containers.exec(
        ctr,
        argv,
        user=ctx.verifier.user,
        env=env,
        workdir=ctx.test_workdir,
        timeout=max(0.0, deadline - time.monotonic()),
    )


def verifier_env(ctx: RunContext, agent_paths: list[str]) -> dict[str, str]:
    """The verifier's environment; in sealed, with cleanroom's Python guard."""
    own_env = ctx.envs.verifier
    if not ctx.plan.freezes_agent:
        return dict(own_env)
    # Python finds nothing of the agent's ahead of what the image provides, no metadata
    # and no bytecode of the agent's at all (see python_guard/sitecustomize.py), and
    # reads no user site of anyone's.
    own = own_env.get("PYTHONPATH")
    return {
        **own_env,
        "PYTHONSAFEPATH": "1",
        "PYTHONNOUSERSITE": "1",
        "CLEANROOM_STATE": json.dumps(agent_paths),
        "CLEANROOM_WITNESS": WITNESS_DIR,
        "CLEANROOM_WITNESS_PLUGIN": ctx.witness_plugin,
        "CLEANROOM_PLACES": json.dumps(
            {"sealed": [ctx.verifier.reward_dir, WITNESS_DIR], "shipped": [TESTS_DIR]}
        ),
        "PYTHONPATH": f"{PYTHON_GUARD_DIR}:{own}" if own else PYTHON_GUARD_DIR,
    }


def read_in_place(
    ctx: RunContext, rt: VerificationRuntime, ctr: str, path: str, cap: int = REWARD_CAP_BYTES
) -> ObservedFile:
    """A file in ``ctr``, through the runtime's files, so no program of the container's
    answers; the red team's control for a trojaned reader asks for the container's own
    programs."""
    if ctx.options.in_container_reader:
        return rt.files.read_with_programs(ctr, path, cap)
    return rt.files.read(ctr, path, cap)


def read_results(
    ctx: RunContext, rt: VerificationRuntime, ctr: str, host_reward_dir: Path | None = None
) -> dict[str, Any]:
    """The task's result files (``[verifier] results``), each's kind and text, read from
    the host's reward folder where they are in it, else from the container."""
    results: dict[str, Any] = {}
    for path in ctx.verifier.result_paths:
        if host_reward_dir is not None and posixpath.dirname(path) == ctx.verifier.reward_dir:
            found = read_capped(host_reward_dir, posixpath.basename(path), path, RESULT_CAP_BYTES)
        else:
            found = read_in_place(ctx, rt, ctr, path, RESULT_CAP_BYTES)
        entry: dict[str, Any] = {"kind": found.kind.value}
        if found.kind in (FileKind.REGULAR, FileKind.OVERSIZE):
            entry.update(size=found.size, text=found.data.decode("utf-8", "replace"))
        results[path] = entry
    return results
