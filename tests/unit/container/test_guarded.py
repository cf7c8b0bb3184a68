"""Every run of a verification is guarded: a bug of cleanroom's own is an invalid outcome
with its trace, never an exception to the caller, and what the run made is removed; and
it runs under the limit its options set."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from cleanroom.core.outcomes import Reason, Status
from cleanroom.verifiers.container.decision.verdict import Evidence, Verified, judge
from cleanroom.verifiers.container.modes import Mode
from cleanroom.verifiers.container.run.context import Resources
from cleanroom.verifiers.container.run.verification import guarded
from cleanroom.verifiers.container.runtime import VerificationRuntime
from cleanroom.verifiers.container.task import load_task
from cleanroom.verifiers.container.verify_options import VerifyOptions

TASK = Path(__file__).resolve().parents[3] / "examples" / "tasks" / "fix-median"


class _Containers:
    def __init__(self) -> None:
        self.removed: list[str] = []

    def remove(self, container: str) -> None:
        self.removed.append(container)


class _Runtime:
    def __init__(self) -> None:
        self.containers = _Containers()


def _run(run: Any, keep: bool = False) -> tuple[Verified, _Runtime]:
    runtime = _Runtime()
    options = VerifyOptions(mode=Mode.SEALED, keep=keep)
    verified = guarded(load_task(TASK), "agent", cast(VerificationRuntime, runtime), options, run)
    return verified, runtime


def test_a_bug_of_cleanroom_is_an_invalid_outcome_with_its_trace() -> None:
    def run(res: Resources, ev: Evidence) -> Verified:
        res.containers.append("ctr-1")
        raise ZeroDivisionError("a bug")

    verified, runtime = _run(run)
    outcome = verified.outcome
    assert outcome.status is Status.INVALID and outcome.reason is Reason.HARNESS_ERROR
    assert "ZeroDivisionError: a bug" in outcome.details["traceback"]
    assert outcome.details["task"] == "fix-median" and outcome.details["agent"] == "agent"
    assert runtime.containers.removed == ["ctr-1"]


def test_a_run_that_returns_is_passed_through_and_torn_down() -> None:
    def run(res: Resources, ev: Evidence) -> Verified:
        res.containers.append("ctr-2")
        ev.unavailable = "the daemon went away"
        return judge(ev)

    verified, runtime = _run(run)
    assert verified.outcome.reason is Reason.VERIFIER_UNAVAILABLE
    assert runtime.containers.removed == ["ctr-2"]


def test_keep_leaves_what_the_run_made() -> None:
    def run(res: Resources, ev: Evidence) -> Verified:
        res.containers.append("ctr-3")
        raise RuntimeError("a bug")

    _, runtime = _run(run, keep=True)
    assert runtime.containers.removed == []


def test_a_harness_s_test_limit_shortens_the_task_s_never_lengthens_it() -> None:
    from cleanroom.verifiers.container.run.context import new_context

    task = load_task(TASK)
    own = task.config.verifier.timeout_sec
    shorter = new_context(
        task, "agent", VerifyOptions(test_limit_s=own / 2), owns_agent_container=True
    )
    longer = new_context(
        task, "agent", VerifyOptions(test_limit_s=own * 2), owns_agent_container=True
    )
    assert not isinstance(shorter, str) and not isinstance(longer, str)
    assert shorter.verifier.timeout_sec == own / 2
    assert longer.verifier.timeout_sec == own
    assert task.config.verifier.timeout_sec == own  # the task's own config is untouched
