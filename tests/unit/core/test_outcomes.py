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
        "reward_metrics": {},
        "details": {"url": "http://x"},
    }


def test_a_broken_environment_is_the_agents_zero_never_an_exclusion() -> None:
    assert Reason.ENVIRONMENT_BROKEN.cause is Cause.AGENT
    outcome = Outcome.agent_fault(Reason.ENVIRONMENT_BROKEN, "writer is dead")
    assert (outcome.status, outcome.score, outcome.exit_code) == (Status.FAILURE, 0.0, 3)
    with pytest.raises(ValueError):
        Outcome.invalid(Reason.ENVIRONMENT_BROKEN)


def test_an_outcome_read_back_from_its_json_is_the_same_outcome() -> None:
    outcomes = [
        Outcome(Status.SUCCESS, 1.0, reward_metrics={"reward": 1.0, "passed": 3.0}),
        Outcome.agent_fault(Reason.TAMPER, "planted", paths=["/logs/verifier/reward.txt"]),
        Outcome.invalid(Reason.VERIFIER_TIMEOUT, "past 60 s"),
    ]
    for outcome in outcomes:
        back = Outcome.from_json(outcome.to_json())
        assert back == outcome
        assert back.details == outcome.details


@pytest.mark.parametrize(
    "junk",
    [
        None,
        [],
        {"outcome": "success"},
        {"outcome": "won", "score": 1.0},
        {"outcome": "success", "score": True},
        {"outcome": "success", "score": "1"},
        {"outcome": "invalid", "score": 0.0, "reason": "tamper"},
        {"outcome": "success", "score": 1.0, "reward_metrics": {"reward": "nan"}},
        {"outcome": "success", "score": 1.0, "reward_metrics": []},
    ],
)
def test_what_is_not_an_outcome_is_refused_by_name(junk: object) -> None:
    with pytest.raises(ValueError):
        Outcome.from_json(junk)


def test_only_a_trusted_reward_carries_metrics() -> None:
    with pytest.raises(ValueError, match="no reward metrics"):
        Outcome(Status.INVALID, None, Reason.BAD_REWARD, reward_metrics={"reward": 1.0})
    with pytest.raises(ValueError, match="not trusted"):
        Outcome(Status.FAILURE, 0.0, Reason.TAMPER, reward_metrics={"reward": 1.0})
    with pytest.raises(ValueError, match="finite"):
        Outcome(Status.SUCCESS, 1.0, reward_metrics={"reward": math.inf})
