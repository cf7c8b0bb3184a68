"""The validation verdict from its three runs."""

from __future__ import annotations

from cleanroom.core.outcomes import Outcome, Reason, Status
from cleanroom.verifiers.osworld.validate import BROKEN, VACUOUS, VALID, PhaseResult, judge


def runs(t0: Outcome, oracle: Outcome, noop: Outcome) -> list[PhaseResult]:
    return [
        PhaseResult("t0", Status.FAILURE, t0),
        PhaseResult("oracle", Status.SUCCESS, oracle),
        PhaseResult("noop", Status.FAILURE, noop),
    ]


def test_fail_pass_fail_is_valid() -> None:
    assert judge(runs(Outcome.failure(), Outcome.success(), Outcome.failure())) == (VALID, ())


def test_pass_at_t0_is_vacuous() -> None:
    verdict, problems = judge(runs(Outcome.success(), Outcome.success(), Outcome.success()))
    assert verdict == VACUOUS and "t=0" in problems[0]


def test_oracle_failing_is_broken() -> None:
    verdict, problems = judge(runs(Outcome.failure(), Outcome.failure(0.5), Outcome.failure()))
    assert verdict == BROKEN and "oracle" in problems[0]


def test_invalid_run_is_broken_with_its_reason() -> None:
    bad = Outcome.invalid(Reason.CHECKER_ERROR, "getter timed out")
    verdict, problems = judge(runs(bad, bad, bad))
    assert (
        verdict == BROKEN and "checker_error" in problems[0] and "getter timed out" in problems[0]
    )
