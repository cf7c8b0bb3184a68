"""Counting outcomes per batch, so a training or evaluation run can plot what it
excluded and what the agent forged instead of losing them in a mean.

A loop that takes cleanroom's rewards sees three kinds of rollout: scored (a valid
outcome: success or failure), scored 0 for the agent's own act (tampering, a broken
work dir: still scored, counted apart by reason so every forging attempt shows), and
excluded (`invalid`: the infrastructure failed, left out of the batch's rewards). Every
reason is always reported, at zero when it did not occur, so each one is a series a
dashboard can plot from the first batch on.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from cleanroom.core.outcomes import Cause, Outcome, Reason, Status

DEFAULT_PREFIX = "cleanroom"


@dataclass
class RewardTally:
    """The outcomes of one batch (or of a whole run), counted."""

    success: int = 0
    failure: int = 0
    agent_caused: Counter[Reason] = field(default_factory=Counter)
    excluded: Counter[Reason] = field(default_factory=Counter)

    def add(self, outcome: Outcome) -> None:
        """Count one rollout's outcome."""
        if outcome.status is Status.INVALID:
            assert outcome.reason is not None
            self.excluded[outcome.reason] += 1
            return
        if outcome.status is Status.SUCCESS:
            self.success += 1
        else:
            self.failure += 1
        if outcome.caused_by is Cause.AGENT:
            assert outcome.reason is not None
            self.agent_caused[outcome.reason] += 1

    def merge(self, other: RewardTally) -> None:
        """Add another tally's counts to this one (several workers' batches)."""
        self.success += other.success
        self.failure += other.failure
        self.agent_caused.update(other.agent_caused)
        self.excluded.update(other.excluded)

    @property
    def scored(self) -> int:
        """Rollouts with a reward: successes and failures, the agent's own 0s among them."""
        return self.success + self.failure

    @property
    def total(self) -> int:
        return self.scored + sum(self.excluded.values())

    def as_metrics(self, prefix: str = DEFAULT_PREFIX) -> dict[str, float]:
        """Flat metrics a logger takes (``cleanroom/excluded/verifier_timeout``...):
        the counts, every reason of each kind (0 when it did not occur), and the
        fractions of the batch excluded and caused by the agent."""
        total = self.total
        metrics: dict[str, float] = {
            f"{prefix}/scored": float(self.scored),
            f"{prefix}/success": float(self.success),
            f"{prefix}/failure": float(self.failure),
            f"{prefix}/agent_caused": float(sum(self.agent_caused.values())),
            f"{prefix}/excluded": float(sum(self.excluded.values())),
            f"{prefix}/excluded_fraction": _fraction(sum(self.excluded.values()), total),
            f"{prefix}/agent_caused_fraction": _fraction(sum(self.agent_caused.values()), total),
        }
        for reason in Reason:
            kind = "agent_caused" if reason.cause is Cause.AGENT else "excluded"
            counts = self.agent_caused if reason.cause is Cause.AGENT else self.excluded
            metrics[f"{prefix}/{kind}/{reason.value}"] = float(counts[reason])
        return metrics


def tally(outcomes: list[Outcome]) -> RewardTally:
    """The tally of ``outcomes``."""
    counted = RewardTally()
    for outcome in outcomes:
        counted.add(outcome)
    return counted


def _fraction(part: int, whole: int) -> float:
    return part / whole if whole else 0.0
