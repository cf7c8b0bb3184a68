"""Stopping the agent's processes before its state is read, and letting them run again
where the verifier or the task's next step needs them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cleanroom.core.outcomes import Reason
from cleanroom.verifiers.container.decision.verdict import AgentFault
from cleanroom.verifiers.container.run.context import RunContext
from cleanroom.verifiers.container.runtime import RuntimeUnavailable, VerificationRuntime

# Tries at freezing the processes a live verifier needs (the freezer itself retries).
FREEZE_ATTEMPTS = 3


@dataclass(frozen=True)
class HeldStill:
    """How the agent's processes were stopped (``frozen``, ``killed``, or ``killed: they
    could not be frozen``), the freezer's refusals on the way, and the agent's fault
    when processes the verifier needed could not be frozen."""

    processes: str
    refusals: tuple[str, ...] = ()
    fault: AgentFault | None = None

    def details(self) -> dict[str, Any]:
        shown: dict[str, Any] = {"agent_processes": self.processes}
        if self.refusals:
            shown["freeze_refusals"] = list(self.refusals)
        return shown


def hold_still(ctx: RunContext, rt: VerificationRuntime, agent_ctr: str) -> HeldStill:
    """Stop every process the agent left before its state is read.

    They are frozen (Docker's pause: a third of the time a kill takes, which also waits
    for the container to stop), and stay frozen until teardown removes the container (a
    harness's container, which outlives the verification, is killed instead); where the
    verifier or a next step needs them (``live_processes``, more steps), they are thawed
    once the state is read. Freezing needs every process to run once, so the task's CPU
    limit is lifted first: busy processes throttled to a small ``cpus`` limit defeat
    Docker's cgroup-v1 freezer. The freezer can still give up on a loaded machine. That
    is a refusal the agent can bring about, so it is never a reason to be invalid:
    processes nothing needs are then killed, at once; processes the verifier needs get
    `FREEZE_ATTEMPTS`, and are then killed, and a verifier that needed them cannot run,
    which is the agent's 0.
    """
    if ctx.limits.cpus is not None:
        rt.containers.lift_cpu_limit(agent_ctr)
    needed = ctx.needs_live_agent
    refusals: list[str] = []
    if not needed and not ctx.owns_agent_container:
        # A harness's container outlives this verification, and its harness stops it as
        # it left it: killed, so nothing frozen is left behind.
        rt.containers.kill(agent_ctr)
        return HeldStill("killed")
    for _ in range(FREEZE_ATTEMPTS if needed else 1):
        try:
            rt.containers.freeze(agent_ctr)
        except RuntimeUnavailable as exc:
            if exc.status is None:  # the daemon did not answer
                raise
            refusals.append(str(exc))
            continue
        return HeldStill("frozen", tuple(refusals))
    # Killing works where freezing did not, unless the daemon itself is failing: then
    # this raises, and the rollout is invalid.
    rt.containers.kill(agent_ctr)
    fault = None
    if needed:
        why = (
            "this task's verifier talks to (live_processes)"
            if ctx.verifier.live_processes
            else "the task's next step runs on"
        )
        fault = AgentFault(
            Reason.UNFREEZABLE,
            f"the agent's processes, which {why}, could not be frozen for verification in "
            f"{FREEZE_ATTEMPTS} attempts: {refusals[-1][-300:]}",
        )
    return HeldStill("killed: they could not be frozen", tuple(refusals), fault)


def thaw(ctx: RunContext, rt: VerificationRuntime, agent_ctr: str) -> None:
    """Let the agent's frozen processes run again, under the task's CPU limit."""
    rt.containers.thaw(agent_ctr)
    if ctx.more_steps and ctx.limits.cpus is not None:
        rt.containers.limit_cpus(agent_ctr, ctx.limits.cpus)
