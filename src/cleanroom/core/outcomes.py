"""Outcomes: the one place that decides what a verifier's result means.

A rollout ends as `success`, `failure` (valid: the task was not done) or `invalid` with
a reason. Invalid rollouts are excluded from training data and never counted as
failures: an infrastructure fault is never blamed on the agent.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Status(StrEnum):
    SUCCESS = "success"
    FAILURE = "failure"
    INVALID = "invalid"


class Reason(StrEnum):
    """Why a rollout is invalid."""

    VERIFIER_UNAVAILABLE = "verifier_unavailable"  # the verifier could not be reached or started
    CHECKER_ERROR = "checker_error"  # a getter or metric could not run
    VERIFIER_TIMEOUT = "verifier_timeout"  # the verifier ran past its limit
    BAD_REWARD = "bad_reward"  # the reward was not a finite number in [0, 1]
    TAMPER = "tamper"  # the agent wrote where only the verifier may
    ISOLATION = "isolation"  # the rollout's window saw a contamination event
    ENVIRONMENT_ERROR = "environment_error"  # the environment could not be built or set up
    INTERRUPTED = "interrupted"  # the harness died before the rollout finished


EXIT_SUCCESS = 0
EXIT_FAILURE = 1
EXIT_INVALID = 2


@dataclass(frozen=True)
class Outcome:
    """A verdict with its score (None when invalid) and, when invalid, the reason."""

    status: Status
    score: float | None
    reason: Reason | None = None
    detail: str = ""
    details: dict[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if self.status is Status.INVALID:
            if self.reason is None or self.score is not None:
                raise ValueError("an invalid outcome has a reason and no score")
        else:
            if self.reason is not None:
                raise ValueError("only invalid outcomes carry a reason")
            if self.score is None or not math.isfinite(self.score) or not 0 <= self.score <= 1:
                raise ValueError(f"a valid outcome has a score in [0, 1], got {self.score!r}")

    @classmethod
    def success(cls, score: float = 1.0, **details: Any) -> Outcome:
        return cls(Status.SUCCESS, float(score), details=details)

    @classmethod
    def failure(cls, score: float = 0.0, **details: Any) -> Outcome:
        return cls(Status.FAILURE, float(score), details=details)

    @classmethod
    def invalid(cls, reason: Reason | str, detail: str = "", **details: Any) -> Outcome:
        return cls(Status.INVALID, None, Reason(reason), detail, details)

    @classmethod
    def from_score(cls, score: float, *, pass_at: float = 1.0, **details: Any) -> Outcome:
        """A valid score: success at or above ``pass_at``, failure below, the score kept."""
        if score >= pass_at:
            return cls.success(score, **details)
        return cls.failure(score, **details)

    @property
    def exit_code(self) -> int:
        """0 success, 1 failure, 2 invalid: what every cleanroom command exits with."""
        return {Status.SUCCESS: EXIT_SUCCESS, Status.FAILURE: EXIT_FAILURE}.get(
            self.status, EXIT_INVALID
        )

    @property
    def valid(self) -> bool:
        return self.status is not Status.INVALID

    def to_json(self) -> dict[str, Any]:
        """The shape every ``--json`` output uses: outcome, score, reason, details."""
        return {
            "outcome": self.status.value,
            "score": self.score,
            "reason": self.reason.value if self.reason else None,
            "detail": self.detail,
            "details": self.details,
        }


def from_exit_code(code: int | None, detail: str = "", **details: Any) -> Outcome:
    """Map a checker's exit code: 0 success, 1 failure, anything else (or none) invalid."""
    if code == EXIT_SUCCESS:
        return Outcome.success(**details)
    if code == EXIT_FAILURE:
        return Outcome.failure(**details)
    why = detail or (f"checker exited with code {code}" if code is not None else "no exit code")
    return Outcome.invalid(Reason.CHECKER_ERROR, why, exit_code=code, **details)
