"""The controls a task's verifications share: each run once per task, image and limit in a
process, and run afresh only when what it gave shows nothing."""

from __future__ import annotations

import threading

import pytest

from cleanroom.core.outcomes import Outcome, Reason
from cleanroom.verifiers.container.decision.verdict import Verified, VerifierFacts
from cleanroom.verifiers.container.verify import _ControlRuns

VALID = Verified(Outcome.failure(0.0), VerifierFacts(finished=True, test_s=1.0))
LOST = Verified(
    Outcome.invalid(Reason.VERIFIER_UNAVAILABLE, "the daemon went away"), VerifierFacts()
)


def runs() -> _ControlRuns:
    return _ControlRuns("test-control", lambda v: v.outcome.status.value != "invalid")


def counting(result: Verified | BaseException) -> tuple[list[int], object]:
    calls: list[int] = []

    def run() -> Verified:
        calls.append(1)
        if isinstance(result, BaseException):
            raise result
        return result

    return calls, run


def test_verifications_of_one_task_share_one_run() -> None:
    controls = runs()
    gate = threading.Event()
    calls: list[int] = []

    def slow() -> Verified:
        calls.append(1)
        gate.wait(5)
        return VALID

    first = controls.started(("task", "image", None), slow)
    second = controls.started(("task", "image", None), slow)  # still running: the same run
    gate.set()

    assert first is second and first.result(5) is VALID
    assert controls.started(("task", "image", None), slow).result(5) is VALID
    assert calls == [1]


def test_another_image_or_limit_is_another_run() -> None:
    controls = runs()
    calls, run = counting(VALID)

    for key in (("task", "a", None), ("task", "b", None), ("task", "a", 30.0)):
        controls.started(key, run).result(5)  # type: ignore[arg-type]

    assert len(calls) == 3


@pytest.mark.parametrize("result", [LOST, RuntimeError("the daemon did not answer")])
def test_a_run_that_showed_nothing_is_run_afresh(result: Verified | BaseException) -> None:
    controls = runs()
    calls, run = counting(result)

    first = controls.started(("task",), run)  # type: ignore[arg-type]
    first.exception(5)
    controls.started(("task",), run).exception(5)  # type: ignore[arg-type]

    assert len(calls) == 2
