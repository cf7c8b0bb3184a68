"""The reviewed change's three cases, on real Docker, in every mode.

A correct answer scores 1, a wrong one 0, and a wrong one with a planted reward.txt
scores 0 in cleared and sealed and 1 in shared (the positive control: the hole is real).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from cleanroom.core.outcomes import Reason, Status
from cleanroom.verifiers.container.modes import Mode
from cleanroom.verifiers.container.runtime.docker import DockerRuntime
from cleanroom.verifiers.container.task import Task
from cleanroom.verifiers.container.verify import AgentSpec, VerifyOptions, verify_task

pytestmark = pytest.mark.docker

PLANT = "echo 1 > /logs/verifier/reward.txt"


@pytest.mark.parametrize("mode", list(Mode))
def test_a_correct_answer_scores_one(
    mode: Mode, runtime: DockerRuntime, example: Callable[[str], Task]
) -> None:
    outcome = verify_task(example("fix-median"), AgentSpec.solution(), runtime, VerifyOptions(mode))

    assert (outcome.status, outcome.score) == (Status.SUCCESS, 1.0)
    assert outcome.details["reward_source"] == "/logs/verifier/reward.txt"
    assert outcome.details["test_exit_code"] == 0


@pytest.mark.parametrize("mode", list(Mode))
def test_a_wrong_answer_scores_zero(
    mode: Mode, runtime: DockerRuntime, example: Callable[[str], Task]
) -> None:
    outcome = verify_task(example("fix-median"), AgentSpec.noop(), runtime, VerifyOptions(mode))

    assert (outcome.status, outcome.score) == (Status.FAILURE, 0.0)
    assert outcome.details["reward_source"] == "missing"
    assert outcome.details["test_exit_code"] == 1


@pytest.mark.parametrize(("mode", "score"), [(Mode.SHARED, 1.0), (Mode.CLEARED, 0.0)])
def test_a_wrong_answer_with_a_planted_reward_scores_zero_except_in_shared(
    mode: Mode, score: float, runtime: DockerRuntime, example: Callable[[str], Task]
) -> None:
    planted = AgentSpec.command(PLANT)

    outcome = verify_task(example("fix-median"), planted, runtime, VerifyOptions(mode))

    assert outcome.valid
    assert outcome.score == score
    assert outcome.details["test_exit_code"] == 1


def test_a_planted_reward_in_sealed_is_seen_as_tamper_and_scored_zero(
    runtime: DockerRuntime, example: Callable[[str], Task]
) -> None:
    planted = AgentSpec.command(PLANT)

    outcome = verify_task(example("fix-median"), planted, runtime, VerifyOptions(Mode.SEALED))

    assert (outcome.status, outcome.score, outcome.reason) == (Status.FAILURE, 0.0, Reason.TAMPER)
    assert outcome.details["tamper"] == ["planted /logs/verifier/reward.txt"]
