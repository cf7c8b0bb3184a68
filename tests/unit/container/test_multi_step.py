"""A multi-step task's score from its steps, with Harbor's meaning and cleanroom's rules."""

from __future__ import annotations

from typing import Any

import pytest

from cleanroom.core.outcomes import Outcome, Reason, Status
from cleanroom.verifiers.container.decision.multi_step import StepOutcome, combine, next_step_runs
from cleanroom.verifiers.container.decision.verdict import Verified, VerifierFacts
from cleanroom.verifiers.container.task import StepConfig


def step(name: str, verified: Verified | Outcome, min_reward: Any = None) -> StepOutcome:
    if isinstance(verified, Outcome):  # a step that read no reward
        verified = Verified(verified, VerifierFacts(finished=True))
    return StepOutcome(StepConfig(name=name, min_reward=min_reward), verified)


def rewarded(**metrics: float) -> Verified:
    """A step whose verifier wrote these metrics (its score the ``reward`` one, or 0)."""
    score = metrics.get("reward", next(iter(metrics.values())) if len(metrics) == 1 else 0.0)
    outcome = Outcome.from_score(score, reward_source="reward.json", reward_metrics=metrics)
    return Verified(outcome, VerifierFacts(finished=True, reward_metrics=metrics))


def no_reward() -> Outcome:
    return Outcome.failure(0.0, reward_source="missing")


def combined(*args: Any, **kwargs: Any) -> Outcome:
    return combine(*args, **kwargs).outcome


def test_mean_averages_each_metric_over_the_steps_that_ran() -> None:
    steps = [step("a", rewarded(reward=1.0)), step("b", rewarded(reward=0.5))]

    outcome = combined(steps, "mean", planned=2)

    assert (outcome.status, outcome.score) == (Status.FAILURE, 0.75)
    assert outcome.details["reward_metrics"] == {"reward": 0.75}


def test_mean_counts_a_metric_a_step_lacks_as_zero() -> None:
    steps = [step("a", rewarded(reward=1.0, speed=1.0)), step("b", rewarded(reward=1.0))]

    outcome = combined(steps, "mean", planned=2)

    assert outcome.score == 1.0
    assert outcome.details["reward_metrics"] == {"reward": 1.0, "speed": 0.5}


def test_a_step_that_left_no_reward_counts_as_zero_in_the_mean() -> None:
    # Harbor leaves such a step out of the average; here it cannot be dropped that way.
    steps = [step("a", rewarded(reward=1.0)), step("b", no_reward())]

    outcome = combined(steps, "mean", planned=3)

    assert (outcome.status, outcome.score) == (Status.FAILURE, 0.5)
    assert outcome.details["ended_at_step"] == "b"


def test_final_takes_the_last_step_that_ran() -> None:
    steps = [step("a", rewarded(reward=0.0)), step("b", rewarded(reward=1.0))]

    outcome = combined(steps, "final", planned=2)

    assert (outcome.status, outcome.score) == (Status.SUCCESS, 1.0)


def test_final_after_a_step_with_no_reward_is_zero() -> None:
    steps = [step("a", rewarded(reward=1.0)), step("b", no_reward())]

    assert combined(steps, "final", planned=2).score == 0.0


def test_every_step_outcome_is_kept_in_the_details() -> None:
    steps = [step("a", rewarded(reward=1.0)), step("b", rewarded(reward=1.0))]

    outcome = combined(steps, "mean", planned=2, details={"task": "t"})

    assert [s["step"] for s in outcome.details["steps"]] == ["a", "b"]
    assert outcome.details["steps"][0]["outcome"] == "success"
    assert outcome.details["task"] == "t"
    assert outcome.details["reward_strategy"] == "mean"


def test_an_invalid_step_makes_the_rollout_invalid_with_its_reason() -> None:
    broken = Outcome.invalid(Reason.VERIFIER_TIMEOUT, "test.sh ran over", timings={"verify_s": 1})
    steps = [step("a", rewarded(reward=1.0)), step("b", broken)]

    outcome = combined(steps, "mean", planned=2, details={"timings": {"total_s": 9}})

    assert (outcome.status, outcome.reason) == (Status.INVALID, Reason.VERIFIER_TIMEOUT)
    assert outcome.detail == "step 'b': test.sh ran over"
    assert outcome.details["ended_at_step"] == "b"
    # The step's timings, which say its verifier ran (the pristine control needs them).
    assert outcome.details["timings"] == {"verify_s": 1}


def test_the_agents_own_zero_in_any_step_is_the_rollouts() -> None:
    tamper = Outcome.agent_fault(Reason.TAMPER, "wrote into /tests")
    steps = [step("a", rewarded(reward=1.0)), step("b", tamper)]

    outcome = combined(steps, "mean", planned=2)

    assert (outcome.status, outcome.score, outcome.reason) == (Status.FAILURE, 0.0, Reason.TAMPER)
    assert "step 'b'" in outcome.detail


def test_several_metrics_and_no_reward_key_score_zero_with_a_note() -> None:
    steps = [step("a", rewarded(accuracy=1.0, f1=1.0))]

    outcome = combined(steps, "mean", planned=1)

    assert outcome.score == 0.0
    assert "no single reward" in outcome.details["reward_note"]


def test_one_metric_alone_is_the_score() -> None:
    assert combined([step("a", rewarded(accuracy=0.25))], "mean", planned=1).score == 0.25


def test_a_combined_score_outside_zero_one_is_a_bad_reward_not_a_crash() -> None:
    # Each step's score is checked; the combination is checked again, whatever its steps say.
    odd = Verified(Outcome.failure(0.0), VerifierFacts(reward_metrics={"reward": 2.0}))

    outcome = combined([step("a", odd)], "mean", planned=1)

    assert (outcome.status, outcome.reason) == (Status.INVALID, Reason.BAD_REWARD)


def test_no_step_is_not_an_outcome() -> None:
    with pytest.raises(ValueError):
        combined([], "mean", planned=2)


@pytest.mark.parametrize(
    ("result", "runs"),
    [
        (rewarded(reward=0.0), True),  # no min_reward: a 0 goes on
        (no_reward(), False),  # Harbor stops after a step without a verifier result
        (Outcome.invalid(Reason.BAD_REWARD, "junk"), False),
        (Outcome.agent_fault(Reason.TAMPER, "planted"), False),
    ],
)
def test_what_ends_the_steps(result: Verified | Outcome, runs: bool) -> None:
    assert next_step_runs(step("a", result)) is runs


@pytest.mark.parametrize(
    ("min_reward", "metrics", "runs"),
    [
        (1.0, {"reward": 1.0}, True),
        (1.0, {"reward": 0.5}, False),
        (0.5, {"accuracy": 1.0}, False),  # a number gates the reward metric
        ({"accuracy": 0.5}, {"accuracy": 0.7, "reward": 0.0}, True),
        ({"accuracy": 0.5, "f1": 0.1}, {"accuracy": 0.7}, False),  # a missing metric fails
    ],
)
def test_min_reward_gates_the_next_step(
    min_reward: Any, metrics: dict[str, float], runs: bool
) -> None:
    assert next_step_runs(step("a", rewarded(**metrics), min_reward)) is runs


def test_the_step_that_ended_the_run_is_named_in_its_facts_for_its_pristine_control() -> None:
    timed_out = Verified(
        Outcome.invalid(Reason.VERIFIER_TIMEOUT, "test.sh ran over"),
        VerifierFacts(finished=True, setup_s=0.5, test_s=60.0),
    )

    verified = combine([step("a", rewarded(reward=1.0)), step("b", timed_out)], "mean", planned=2)

    assert verified.facts.step == "b"
    assert (verified.facts.finished, verified.facts.setup_and_test_s) == (True, 60.5)


def test_a_combined_score_has_no_verification_of_its_own_to_control() -> None:
    verified = combine([step("a", rewarded(reward=1.0))], "mean", planned=1)

    assert not verified.facts.finished
    assert verified.facts.reward_metrics == {"reward": 1.0}
