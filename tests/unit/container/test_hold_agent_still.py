"""How the sealed verifier stops the agent's processes, with the daemon's answers scripted.

Docker's freezer refusing is not reproducible on demand (its failures depend on CPU
time); these tests script the daemon's answers to check the decisions made on them.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from cleanroom.core.outcomes import Reason
from cleanroom.verifiers.container.modes import Mode
from cleanroom.verifiers.container.run.context import RunContext, new_context
from cleanroom.verifiers.container.run.freeze import FREEZE_ATTEMPTS, hold_still, thaw
from cleanroom.verifiers.container.runtime import RuntimeUnavailable, VerificationRuntime
from cleanroom.verifiers.container.task import load_task
from cleanroom.verifiers.container.verify_options import VerifyOptions

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "tasks"


def refusal(status: int | None) -> RuntimeUnavailable:
    exc = RuntimeUnavailable("pausing 54b2f73a6f6f: OCI runtime pause failed: unable to freeze")
    exc.status = status
    return exc


class ScriptedDaemon:
    """Answers pause with the scripted refusals (then success); records every call."""

    def __init__(self, pause_refusals: list[RuntimeUnavailable]) -> None:
        self.pause_refusals = pause_refusals
        self.calls: list[str] = []

    def lift_cpu_limit(self, container: str) -> None:
        self.calls.append("lift")

    def freeze(self, container: str) -> None:
        self.calls.append("pause")
        if self.pause_refusals:
            raise self.pause_refusals.pop(0)

    def kill(self, container: str) -> None:
        self.calls.append("kill")

    def thaw(self, container: str) -> None:
        self.calls.append("unpause")

    def limit_cpus(self, container: str, cpus: float) -> None:
        self.calls.append(f"limit {cpus:g}")


def context(task: str, *, owns: bool = True, more_steps: bool = False) -> RunContext:
    made = new_context(
        load_task(EXAMPLES / task), "noop", VerifyOptions(Mode.SEALED), owns_agent_container=owns
    )
    assert isinstance(made, RunContext)
    return replace(made, more_steps=more_steps)


def runtime(daemon: ScriptedDaemon) -> VerificationRuntime:
    return SimpleNamespace(containers=daemon)  # type: ignore[return-value]


def test_processes_no_verifier_talks_to_are_frozen_until_teardown() -> None:
    daemon = ScriptedDaemon([])
    ctx = context("fix-median")

    held = hold_still(ctx, runtime(daemon), "ctr")

    assert daemon.calls == ["lift", "pause"]  # never thawed: teardown removes them
    assert held.processes == "frozen"
    assert held.fault is None


def test_processes_nothing_needs_are_killed_at_the_first_refusal_and_it_is_no_fault() -> None:
    daemon = ScriptedDaemon([refusal(500)])
    ctx = context("fix-median")

    held = hold_still(ctx, runtime(daemon), "ctr")

    assert daemon.calls == ["lift", "pause", "kill"]
    assert held.processes == "killed: they could not be frozen"
    assert held.fault is None


def test_a_harness_containers_processes_nothing_needs_are_killed() -> None:
    daemon = ScriptedDaemon([])
    ctx = context("fix-median", owns=False)  # a harness\'s container outlives the verification

    held = hold_still(ctx, runtime(daemon), "ctr")

    assert daemon.calls == ["lift", "kill"]
    assert held.processes == "killed"


def test_a_live_verifiers_processes_are_frozen_after_a_refusal_or_two() -> None:
    daemon = ScriptedDaemon([refusal(500)] * (FREEZE_ATTEMPTS - 1))
    ctx = context("http-sum")

    held = hold_still(ctx, runtime(daemon), "ctr")

    assert daemon.calls == ["lift", *["pause"] * FREEZE_ATTEMPTS]
    assert held.fault is None
    assert held.processes == "frozen"
    assert len(held.refusals) == FREEZE_ATTEMPTS - 1


def test_processes_that_cannot_be_frozen_are_killed_and_are_the_agents_zero() -> None:
    daemon = ScriptedDaemon([refusal(500)] * FREEZE_ATTEMPTS)
    ctx = context("http-sum")

    held = hold_still(ctx, runtime(daemon), "ctr")

    assert daemon.calls == ["lift", *["pause"] * FREEZE_ATTEMPTS, "kill"]
    assert held.fault is not None
    assert held.fault.reason is Reason.UNFREEZABLE
    assert "unable to freeze" in held.fault.detail


def test_a_daemon_that_does_not_answer_is_never_blamed_on_the_agent() -> None:
    daemon = ScriptedDaemon([refusal(None)])
    ctx = context("http-sum")

    with pytest.raises(RuntimeUnavailable):
        hold_still(ctx, runtime(daemon), "ctr")


def test_between_steps_the_agents_processes_are_frozen_then_thawed_under_their_limit() -> None:
    daemon = ScriptedDaemon([])
    ctx = context("two-step-report", more_steps=True)  # the next step runs on this container

    held = hold_still(ctx, runtime(daemon), "ctr")
    thaw(ctx, runtime(daemon), "ctr")

    assert daemon.calls == ["lift", "pause", "unpause", "limit 1"]
    assert held.processes == "frozen"


def test_after_the_last_step_the_agents_processes_stay_frozen() -> None:
    daemon = ScriptedDaemon([])
    ctx = context("two-step-report")

    hold_still(ctx, runtime(daemon), "ctr")

    assert daemon.calls == ["lift", "pause"]


def test_processes_a_next_step_needs_that_cannot_be_frozen_are_the_agents_zero() -> None:
    daemon = ScriptedDaemon([refusal(500)] * FREEZE_ATTEMPTS)
    ctx = context("two-step-report", more_steps=True)  # the next step runs on this container

    held = hold_still(ctx, runtime(daemon), "ctr")

    assert held.fault is not None
    assert held.fault.reason is Reason.UNFREEZABLE
    assert "next step" in held.fault.detail
