"""Outcomes: verdicts map to exit codes, and invalid never carries a score."""

from __future__ import annotations

import math

import pytest

from cleanroom.core.outcomes import Cause, Outcome, Reason, Status


def test_outcomes_exit_with_zero_one_two_and_three_for_the_agents_own_failure() -> None:
    assert [
        o.exit_code
        for o in (
            Outcome.success(),
            Outcome.failure(),
            Outcome.invalid(Reason.VERIFIER_UNAVAILABLE),
            Outcome.agent_fault(Reason.TAMPER),
        )
    ] == [0, 1, 2, 3]


@pytest.mark.parametrize("reason", [r for r in Reason if r.cause is Cause.AGENT])
def test_what_the_agent_caused_is_a_scored_zero_never_invalid(reason: Reason) -> None:
    outcome = Outcome.agent_fault(reason, "why")

    assert (outcome.status, outcome.score, outcome.valid) == (Status.FAILURE, 0.0, True)
    assert outcome.caused_by is Cause.AGENT
    with pytest.raises(ValueError):
        Outcome.invalid(reason)


@pytest.mark.parametrize("reason", [r for r in Reason if r.cause is Cause.INFRASTRUCTURE])
def test_what_the_infrastructure_caused_is_invalid_never_a_score(reason: Reason) -> None:
    assert Outcome.invalid(reason).caused_by is Cause.INFRASTRUCTURE
    with pytest.raises(ValueError):
        Outcome(Status.FAILURE, 0.0, reason)


def test_an_agent_reason_never_rides_on_a_success_or_a_partial_score() -> None:
    with pytest.raises(ValueError):
        Outcome(Status.SUCCESS, 1.0, Reason.TAMPER)
    with pytest.raises(ValueError):
        Outcome(Status.FAILURE, 0.5, Reason.TAMPER)


def test_an_invalid_outcome_cannot_carry_a_score() -> None:
    with pytest.raises(ValueError):
        Outcome(Status.INVALID, 0.0, Reason.CHECKER_ERROR)


def test_a_valid_outcome_cannot_carry_a_reason() -> None:
    with pytest.raises(ValueError):
        Outcome(Status.FAILURE, 0.0, Reason.CHECKER_ERROR)


@pytest.mark.parametrize("score", [math.nan, math.inf, -0.5, 1.5])
def test_a_valid_outcome_needs_a_finite_score_in_the_unit_interval(score: float) -> None:
    with pytest.raises(ValueError):
        Outcome.failure(score)


def test_from_score_keeps_fractional_credit_as_a_failure_with_its_score() -> None:
    outcome = Outcome.from_score(0.75)
    assert (outcome.status, outcome.score) == (Status.FAILURE, 0.75)
    assert Outcome.from_score(1.0).status is Status.SUCCESS


def test_json_shape_names_outcome_score_reason_and_details() -> None:
    data = Outcome.invalid(Reason.VERIFIER_UNAVAILABLE, "refused", url="http://x").to_json()
    assert data == {
        "outcome": "invalid",
        "score": None,
        "reason": "verifier_unavailable",
        "caused_by": "infrastructure",
        "detail": "refused",
        "details": {"url": "http://x"},
    }


def test_a_broken_environment_is_the_agents_zero_never_an_exclusion() -> None:
    assert Reason.ENVIRONMENT_BROKEN.cause is Cause.AGENT
    outcome = Outcome.agent_fault(Reason.ENVIRONMENT_BROKEN, "writer is dead")
    assert (outcome.status, outcome.score, outcome.exit_code) == (Status.FAILURE, 0.0, 3)
    with pytest.raises(ValueError):
        Outcome.invalid(Reason.ENVIRONMENT_BROKEN)
