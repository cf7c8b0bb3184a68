"""An `Outcome` in the shapes the loops that consume rewards take.

Every shape keeps `invalid` apart from 0: a loop that has a way to say "no reward"
(None, an exception, a masked sample) gets it for an invalid outcome, and the agent's
own 0 (its forging attempt, with its reason) stays a 0.
"""

from __future__ import annotations

from cleanroom.core.errors import invalid_outcome_error
from cleanroom.core.outcomes import Outcome, Status

__all__ = ["reward_info", "reward_or_none", "rewards_of"]


def reward_or_none(outcome: Outcome) -> float | None:
    """The reward of ``outcome``, or None when it must not be scored (invalid): what
    TRL and most trainers take as "no reward". Not verl: there an unset
    ``reward_score`` means "not computed yet" and a None reward fails the batch, so its
    adapter raises instead (`verl_reward`)."""
    if outcome.status is Status.INVALID:
        return None
    return outcome.score


def rewards_of(outcome: Outcome) -> dict[str, float]:
    """The named rewards a Harbor-style harness records for ``outcome`` (its reward
    metrics, ``reward`` the score); `InvalidOutcomeError` when invalid.

    What the agent caused (a planted reward, a broken work dir) is a valid 0, recorded
    as ``{"reward": 0.0}`` alone: none of the reward it left is trusted.
    """
    if outcome.status is Status.INVALID or outcome.score is None:
        raise invalid_outcome_error(outcome)
    return {**outcome.reward_metrics, "reward": outcome.score}


def reward_info(outcome: Outcome) -> dict[str, str | float | None]:
    """What a loop logs beside a reward: the outcome, its reason, who caused it and the
    one-line detail (None for what does not apply)."""
    return {
        "outcome": outcome.status.value,
        "reason": outcome.reason.value if outcome.reason else None,
        "caused_by": outcome.caused_by.value if outcome.caused_by else None,
        "detail": outcome.detail or None,
    }
