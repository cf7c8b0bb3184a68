"""Outcomes: the one place that decides what a verifier's result means.

A rollout ends as `success`, `failure` (valid: the task was not done) or `invalid` with
a reason. Every reason says who caused it:

- the infrastructure (Docker, a display, the verify server, the harness, the task's own
  verifier): the rollout is `invalid`, excluded from training data, never a 0;
- the agent (tampering with the verifier's places, breaking its own work dir): the rollout
  is a `failure` scored 0 that keeps its reason, so an agent can never turn a 0 into an
  exclusion, and every attempt at forging stays visible.
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


class Cause(StrEnum):
    """Who caused an outcome's reason."""

    INFRASTRUCTURE = "infrastructure"
    AGENT = "agent"


class Reason(StrEnum):
    """Why a rollout is invalid (the infrastructure's fault) or failed by its own act."""

    VERIFIER_UNAVAILABLE = "verifier_unavailable"  # the verifier could not be reached or started
    CHECKER_ERROR = "checker_error"  # a getter or metric could not run
    VERIFIER_TIMEOUT = "verifier_timeout"  # the verifier ran past its limit
    BAD_REWARD = "bad_reward"  # the verifier's reward was not a finite number in [0, 1]
    ISOLATION = "isolation"  # the rollout's window saw a contamination event
    ENVIRONMENT_ERROR = "environment_error"  # the environment could not be built or set up
    INTERRUPTED = "interrupted"  # the harness died before the rollout finished
    HARNESS_ERROR = "harness_error"  # cleanroom's own code raised: a bug, with its traceback
    # Caused by the agent: scored 0, never excluded.
    TAMPER = "tamper"  # the agent wrote into the verifier's own places (tests, reward)
    WORKSPACE_BROKEN = "workspace_broken"  # the work dir is gone, not a folder, or unreadable
    WORKSPACE_TOO_LARGE = "workspace_too_large"  # the state to verify is over its size cap
    UNFREEZABLE = "unfreezable"  # the processes a live verifier needs could not be frozen
    # The verifier failed on the agent's state (time, reward, setup) and ran cleanly on the
    # pristine one in the same run.
    BROKE_VERIFIER = "broke_verifier"
    # A success test.sh claimed while the test runner's witness saw the agent's code cut
    # the run short: a session never finished, an exit status replaced at the end, the
    # task's tests skipped or the session ended by code of the agent's.
    RUNNER_CUT_SHORT = "runner_cut_short"
    # The environment fell over mid-rollout through what only the agent's own processes
    # act on (see `core.breakage`): its programs, its session bus, its own memory.
    ENVIRONMENT_BROKEN = "environment_broken"
    # The token sweep found, where the rollout wrote, another environment's token shape
    # that the run never minted: a forgery, which would otherwise pass for a leak.
    FORGED_TOKEN = "forged_token"
    # A program of the rollout's environment owned a selection and never answered the
    # harness's read of it.
    SELECTION_UNANSWERED = "selection_unanswered"
    # A client of the rollout's environment's display held the server (a grab) while the
    # harness observed or acted there: only the environment's programs reach its display.
    DISPLAY_HELD = "display_held"
    # The rollout's lease tried to submit past its budget at the verify server (count or
    # bytes): a flood of submissions is the rollout's own act.
    SUBMISSION_BUDGET = "submission_budget"

    @property
    def cause(self) -> Cause:
        """Who caused this reason: the agent's are scored 0, the rest are invalid."""
        return Cause.AGENT if self in _AGENT_REASONS else Cause.INFRASTRUCTURE


_AGENT_REASONS = frozenset(
    {
        Reason.TAMPER,
        Reason.WORKSPACE_BROKEN,
        Reason.WORKSPACE_TOO_LARGE,
        Reason.UNFREEZABLE,
        Reason.BROKE_VERIFIER,
        Reason.RUNNER_CUT_SHORT,
        Reason.ENVIRONMENT_BROKEN,
        Reason.FORGED_TOKEN,
        Reason.SELECTION_UNANSWERED,
        Reason.DISPLAY_HELD,
        Reason.SUBMISSION_BUDGET,
    }
)


EXIT_SUCCESS = 0
EXIT_FAILURE = 1
EXIT_INVALID = 2
EXIT_AGENT_FAULT = 3  # a failure scored 0 because of what the agent did (tamper, ...)


@dataclass(frozen=True)
class Outcome:
    """A verdict with its score (None when invalid) and, when invalid, the reason.

    ``reward_metrics`` are the named metrics of the reward the score came from (a
    ``reward.json`` may hold several; ``reward.txt`` holds one, ``reward``): empty when
    no reward was read or trusted (an invalid outcome, the agent's own 0)."""

    status: Status
    score: float | None
    reason: Reason | None = None
    detail: str = ""
    details: dict[str, Any] = field(default_factory=dict, compare=False)
    reward_metrics: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.status is Status.INVALID:
            if self.reason is None or self.score is not None:
                raise ValueError("an invalid outcome has a reason and no score")
            if self.reason.cause is not Cause.INFRASTRUCTURE:
                raise ValueError(f"{self.reason} is the agent's doing: a failure, not invalid")
            if self.reward_metrics:
                raise ValueError("an invalid outcome has no reward metrics")
            return
        if self.score is None or not math.isfinite(self.score) or not 0 <= self.score <= 1:
            raise ValueError(f"a valid outcome has a score in [0, 1], got {self.score!r}")
        if self.reason is not None and (
            self.status is not Status.FAILURE
            or self.reason.cause is not Cause.AGENT
            or self.score != 0.0
        ):
            raise ValueError("only a failure scored 0 by the agent's own act carries a reason")
        if self.reason is not None and self.reward_metrics:
            raise ValueError("the agent's own 0 has no reward metrics: its reward is not trusted")
        for name, value in self.reward_metrics.items():
            if not isinstance(value, int | float) or not math.isfinite(value):
                raise ValueError(f"reward metric {name!r} is not a finite number: {value!r}")

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
    def agent_fault(cls, reason: Reason | str, detail: str = "", **details: Any) -> Outcome:
        """A failure scored 0 because of what the agent did; the reason stays visible."""
        return cls(Status.FAILURE, 0.0, Reason(reason), detail, details)

    @classmethod
    def from_score(cls, score: float, *, pass_at: float = 1.0, **details: Any) -> Outcome:
        """A valid score: success at or above ``pass_at``, failure below, the score kept."""
        if score >= pass_at:
            return cls.success(score, **details)
        return cls.failure(score, **details)

    @property
    def exit_code(self) -> int:
        """What every cleanroom command exits with: 0 success, 1 failure, 2 invalid (the
        infrastructure's fault), 3 a failure caused by the agent's own act."""
        if self.caused_by is Cause.AGENT:
            return EXIT_AGENT_FAULT
        return {Status.SUCCESS: EXIT_SUCCESS, Status.FAILURE: EXIT_FAILURE}.get(
            self.status, EXIT_INVALID
        )

    @property
    def valid(self) -> bool:
        return self.status is not Status.INVALID

    @property
    def caused_by(self) -> Cause | None:
        """Who caused the reason, or None when there is none."""
        return self.reason.cause if self.reason is not None else None

    @classmethod
    def from_json(cls, data: Any) -> Outcome:
        """The outcome `to_json` wrote; `ValueError` for anything else."""
        if not isinstance(data, dict):
            raise ValueError(f"an outcome is a JSON object, not {type(data).__name__}")
        try:
            reason = data.get("reason")
            score = data.get("score")
            metrics = data.get("reward_metrics", {})
            details = data.get("details", {})
            if not isinstance(metrics, dict) or not isinstance(details, dict):
                raise ValueError("reward_metrics and details are JSON objects")
            for value in (score, *metrics.values()):
                if value is not None and (
                    isinstance(value, bool) or not isinstance(value, int | float)
                ):
                    raise ValueError(f"a score or metric is not a number: {value!r}")
            return cls(
                Status(data["outcome"]),
                None if score is None else float(score),
                Reason(reason) if reason is not None else None,
                str(data.get("detail") or ""),
                dict(details),
                {str(k): float(v) for k, v in metrics.items()},
            )
        except (KeyError, TypeError) as exc:
            raise ValueError(f"not an outcome: {exc!r}") from None

    def to_json(self) -> dict[str, Any]:
        """The shape every ``--json`` output uses: outcome, score, reason, who caused it,
        details."""
        return {
            "outcome": self.status.value,
            "score": self.score,
            "reason": self.reason.value if self.reason else None,
            "caused_by": self.caused_by.value if self.caused_by else None,
            "detail": self.detail,
            "reward_metrics": self.reward_metrics,
            "details": self.details,
        }
