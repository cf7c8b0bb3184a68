"""A multi-step task's score from its steps' outcomes, with Harbor's meaning.

Harbor runs ``[[steps]]`` in order in one environment, verifies each, and makes the
trial's reward with ``multi_step_reward_strategy``: ``mean`` (the default) averages each
metric over the steps that ran, a metric a step lacks counting 0; ``final`` takes the last
step that ran. A step ends the run early when it left no reward, or when its rewards are
below its ``min_reward``; the steps after it do not run and do not count.

Two differences keep cleanroom's rules. A step that is `invalid` makes the whole rollout
invalid with that step's reason, and a step the agent failed by its own act (tampering,
a broken work dir) makes the whole rollout that 0: neither can be averaged away. And a
step that left no reward counts as a 0 in the mean, where Harbor leaves it out of the
average: otherwise an agent could drop a step it failed by making its verifier write
nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from cleanroom.core.outcomes import Cause, Outcome, Reason, Status
from cleanroom.verifiers.container.decision.verdict import Verified, VerifierFacts
from cleanroom.verifiers.container.task import MultiStepRewardStrategy, StepConfig


@dataclass(frozen=True)
class StepOutcome:
    """One step that ran, and how its verification ended."""

    config: StepConfig
    verified: Verified

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def outcome(self) -> Outcome:
        return self.verified.outcome

    @property
    def metrics(self) -> dict[str, float]:
        """The step's named rewards; none when it left no reward file."""
        return dict(self.verified.facts.reward_metrics or {})

    @property
    def left_a_reward(self) -> bool:
        return self.outcome.valid and self.verified.facts.reward_metrics is not None


def next_step_runs(step: StepOutcome) -> bool:
    """Whether the steps after ``step`` run: not after an invalid step or the agent's own
    0, nor (as in Harbor) after a step with no reward or one below its ``min_reward``."""
    if not step.outcome.valid or step.outcome.caused_by is Cause.AGENT:
        return False
    if not step.left_a_reward:
        return False
    return step.config.passes_gate(step.metrics)


def combine(
    steps: Sequence[StepOutcome],
    strategy: MultiStepRewardStrategy,
    planned: int,
    details: dict[str, Any] | None = None,
) -> Verified:
    """The rollout's outcome from the ``steps`` that ran of ``planned``.

    Each step's outcome is kept in ``details["steps"]``; an invalid step's or the agent's
    own 0 is the rollout's, with the step named (and its facts the rollout's, for the
    pristine control of that step); otherwise the score is the ``strategy``'s primary
    reward (the ``reward`` metric, or the only one) of the steps' metrics.
    """
    if not steps:
        raise ValueError("a multi-step rollout with no step that ran has no outcome")
    shown = {
        **(details or {}),
        "reward_strategy": strategy,
        "steps_planned": planned,
        "steps": [{"step": s.name, **s.outcome.to_json()} for s in steps],
    }
    for step in steps:
        out = step.outcome
        if out.status is Status.INVALID or out.caused_by is Cause.AGENT:
            # The step's own details (its timings among them) describe what ended the run.
            merged = {**shown, **out.details, "steps": shown["steps"], "ended_at_step": step.name}
            assert out.reason is not None
            detail = f"step {step.name!r}: {out.detail}"
            facts = replace(step.verified.facts, step=step.name)
            if out.status is Status.INVALID:
                return Verified(Outcome.invalid(out.reason, detail, **merged), facts)
            return Verified(Outcome.agent_fault(out.reason, detail, **merged), facts)
    metrics = _final(steps) if strategy == "final" else _mean(steps)
    shown["reward_metrics"] = metrics
    if len(steps) < planned:
        shown["ended_at_step"] = steps[-1].name
    score = _primary(metrics)
    if score is None:
        shown["reward_note"] = (
            f'{len(metrics)} metric(s) and no single reward (no "reward" key, not one '
            "metric alone): scored 0, as Harbor records no reward for it"
        )
        score = 0.0
    # The rollout's facts: its metrics, and no verification of its own that a pristine
    # control could run again.
    facts = VerifierFacts(reward_metrics=metrics, step=steps[-1].name)
    if not 0.0 <= score <= 1.0:  # each step's score was checked; a mean of them is not
        why = f"the steps' {strategy} reward {score!r} is not in [0, 1]"
        return Verified(Outcome.invalid(Reason.BAD_REWARD, why, **shown), facts)
    scored = replace(Outcome.from_score(score, **shown), reward_metrics=metrics)
    return Verified(scored, facts)


def _mean(steps: Sequence[StepOutcome]) -> dict[str, float]:
    keys = sorted({key for step in steps for key in step.metrics})
    # A step with no reward has no metrics: it counts as 0 for each (see the module).
    if not keys and any(not s.left_a_reward for s in steps):
        keys = ["reward"]
    return {key: sum(s.metrics.get(key, 0.0) for s in steps) / len(steps) for key in keys}


def _final(steps: Sequence[StepOutcome]) -> dict[str, float]:
    last = steps[-1]
    return last.metrics if last.left_a_reward else {"reward": 0.0}


def _primary(metrics: dict[str, float]) -> float | None:
    if "reward" in metrics:
        return metrics["reward"]
    if len(metrics) == 1:
        return next(iter(metrics.values()))
    return None
