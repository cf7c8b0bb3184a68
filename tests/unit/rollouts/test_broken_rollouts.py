"""A rollout whose environment broke under it: the agent's own breakage is its 0 with
``environment_broken``; the infrastructure's, and a plain reset under it, are invalid."""

from __future__ import annotations

from pathlib import Path

import pytest

from cleanroom.core.breakage import Breakage
from cleanroom.core.outcomes import Cause, Outcome, Reason, Status
from cleanroom.core.tokens import RolloutId, mint
from cleanroom.environments.errors import (
    DisplayHeld,
    EnvironmentBroken,
    PoolError,
    SelectionHeld,
    SelectionUnanswered,
    StaleGeneration,
)
from cleanroom.environments.x11.deadline import DisplayUnanswered, StalledServer
from cleanroom.rollouts.base import RolloutContext, SmokeTask
from cleanroom.rollouts.smoke_rollout import attempt_rollout

AGENT = Breakage(Cause.AGENT, "its own processes ended what ran in it: writer is dead")
INFRA = Breakage(Cause.INFRASTRUCTURE, "its display died: display is dead")


class _Task(SmokeTask):
    name = "broken"

    def __init__(self, error: Exception) -> None:
        self.error = error
        self.torn_down = False

    def policy(self, ctx: RolloutContext) -> None:
        raise self.error

    def verify(self, ctx: RolloutContext) -> Outcome:  # pragma: no cover - never reached
        return Outcome.success()

    def teardown(self, ctx: RolloutContext) -> None:
        self.torn_down = True


def _run(error: Exception) -> Outcome:
    token = mint(RolloutId("env01", 0, 1))
    ctx = RolloutContext(token, "env01", None, Path("."), lambda e, u: None, lambda: Path("."))  # type: ignore[arg-type]
    task = _Task(error)
    outcome = attempt_rollout(task, ctx)
    assert task.torn_down
    return outcome


@pytest.mark.parametrize(
    "error",
    [EnvironmentBroken("env01", 1, AGENT), StaleGeneration("env01", 1, 2, AGENT)],
)
def test_the_agents_own_breakage_is_its_zero(error: Exception) -> None:
    outcome = _run(error)
    assert (outcome.status, outcome.score, outcome.reason) == (
        Status.FAILURE,
        0.0,
        Reason.ENVIRONMENT_BROKEN,
    )
    assert "writer is dead" in outcome.detail


@pytest.mark.parametrize(
    "error",
    [
        EnvironmentBroken("env01", 1, INFRA),
        StaleGeneration("env01", 1, 2, INFRA),
        StaleGeneration("env01", 1, 2),  # a reset by someone else: nothing the agent did
        PoolError("the pool failed"),
    ],
)
def test_what_the_infrastructure_broke_is_invalid(error: Exception) -> None:
    outcome = _run(error)
    assert (outcome.status, outcome.reason) == (Status.INVALID, Reason.ENVIRONMENT_ERROR)


def test_a_selection_its_own_program_keeps_silent_is_the_agents_zero() -> None:
    outcome = _run(SelectionUnanswered("env01", "CLIPBOARD", 0x600001))
    assert (outcome.status, outcome.score, outcome.reason) == (
        Status.FAILURE,
        0.0,
        Reason.SELECTION_UNANSWERED,
    )


@pytest.mark.parametrize(
    "error",
    [
        DisplayHeld("env01", "a screenshot", 321, 20),
        DisplayHeld("env01", "input", 321, 20),
        SelectionHeld("env01", "CLIPBOARD", 321, 20),
    ],
)
def test_a_display_its_own_client_held_is_the_agents_zero_with_the_evidence(
    error: DisplayHeld,
) -> None:
    outcome = _run(error)
    assert (outcome.status, outcome.score, outcome.reason) == (
        Status.FAILURE,
        0.0,
        Reason.DISPLAY_HELD,
    )
    assert outcome.details == {"doing": error.doing, "server_pid": 321, "unread": 20}


@pytest.mark.parametrize(
    "server",
    [None, StalledServer(321, "R", 20), StalledServer(321, "T", 20), StalledServer(321, "S", 0)],
)
def test_a_display_that_did_not_answer_without_a_grab_is_invalid(
    server: StalledServer | None,
) -> None:
    outcome = _run(DisplayUnanswered(":7", 5.0, "a screenshot", server))
    assert (outcome.status, outcome.reason) == (Status.INVALID, Reason.ENVIRONMENT_ERROR)
