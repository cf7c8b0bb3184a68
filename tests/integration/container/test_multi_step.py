"""Harbor's multi-step tasks on real Docker: the steps run in order in one agent
container, each verified in the rollout's mode, the score by the reward strategy."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from cleanroom.core.outcomes import Reason, Status
from cleanroom.verifiers.container.modes import Mode
from cleanroom.verifiers.container.runtime.docker import DockerRuntime
from cleanroom.verifiers.container.task import Task
from cleanroom.verifiers.container.verify import AgentSpec, VerifyOptions, verify_task

pytestmark = pytest.mark.docker

TASK = "two-step-report"
SEALED = VerifyOptions(Mode.SEALED)
# One agent for both steps, as a real agent would be: it reads where it is from the files.
# Step 1 leaves a process running; step 2 does its work only if that process survived,
# which it does when the step starts from the agent's live container, as in Harbor.
BOTH_STEPS = r"""
if [ ! -f /app/settings.ini ]; then
    echo threshold=50 > /app/settings.ini
    sleep 600 & echo $! > /tmp/helper.pid
elif kill -0 "$(cat /tmp/helper.pid)"; then
    awk '$1 > 50 { n++ } END { print n + 0 }' /app/readings.txt > /app/count.txt
fi
"""


def steps_of(outcome_details: dict[str, object]) -> list[tuple[str, str, float | None]]:
    steps = outcome_details["steps"]
    assert isinstance(steps, list)
    return [(s["step"], s["outcome"], s["score"]) for s in steps]


@pytest.mark.parametrize("mode", [Mode.SHARED, Mode.CLEARED])
def test_the_solution_passes_and_no_action_fails_in_the_in_place_modes(
    mode: Mode, runtime: DockerRuntime, example: Callable[[str], Task]
) -> None:
    task = example(TASK)
    solved = verify_task(task, AgentSpec.solution(), runtime, VerifyOptions(mode))
    assert (solved.status, solved.score) == (Status.SUCCESS, 1.0), solved.detail
    idle = verify_task(task, AgentSpec.noop(), runtime, VerifyOptions(mode))
    assert (idle.status, idle.score, idle.reason) == (Status.FAILURE, 0.0, None), idle.detail


def test_each_step_is_verified_sealed_and_kept_in_the_details(
    runtime: DockerRuntime, example: Callable[[str], Task]
) -> None:
    outcome = verify_task(example(TASK), AgentSpec.solution(), runtime, SEALED)

    assert steps_of(outcome.details) == [
        ("configure", "success", 1.0),
        ("report", "success", 1.0),
    ]
    first, last = outcome.details["steps"]
    # Between steps the agent's processes are frozen while its state is read, then go
    # on; after the last they stay frozen until teardown (or are killed where the
    # freezer refuses).
    assert first["details"]["agent_processes"] == "frozen"
    assert last["details"]["agent_processes"] in {"frozen", "killed: they could not be frozen"}
    assert first["details"]["state_paths"] == ["/app"]


def test_a_step_below_its_min_reward_ends_the_steps(
    runtime: DockerRuntime, example: Callable[[str], Task]
) -> None:
    outcome = verify_task(example(TASK), AgentSpec.noop(), runtime, SEALED)

    assert steps_of(outcome.details) == [("configure", "failure", 0.0)]
    assert outcome.details["ended_at_step"] == "configure"


@pytest.mark.parametrize("mode", [Mode.SEALED, Mode.SHARED])
def test_the_next_step_starts_from_the_agents_live_container(
    mode: Mode, runtime: DockerRuntime, example: Callable[[str], Task]
) -> None:
    outcome = verify_task(
        example(TASK), AgentSpec.command(BOTH_STEPS), runtime, VerifyOptions(mode)
    )

    assert (outcome.status, outcome.score) == (Status.SUCCESS, 1.0), outcome.details


def test_a_reward_planted_in_a_later_step_is_the_agents_zero(
    runtime: DockerRuntime, example: Callable[[str], Task]
) -> None:
    plant = (
        "if [ -f /app/settings.ini ]; then echo 1 > /logs/verifier/reward.txt; "
        "else echo threshold=50 > /app/settings.ini; fi"
    )

    outcome = verify_task(example(TASK), AgentSpec.command(plant), runtime, SEALED)

    assert (outcome.status, outcome.score, outcome.reason) == (
        Status.FAILURE,
        0.0,
        Reason.TAMPER,
    )
    assert outcome.detail.startswith("step 'report': ")


def test_a_step_whose_verifier_is_broken_makes_the_rollout_invalid(
    runtime: DockerRuntime, variant: Callable[..., Task]
) -> None:
    task = variant(
        TASK, {"steps/report/tests/test.sh": "#!/bin/bash\necho nan > /logs/verifier/reward.txt\n"}
    )

    outcome = verify_task(task, AgentSpec.solution(), runtime, SEALED)

    assert (outcome.status, outcome.reason) == (Status.INVALID, Reason.BAD_REWARD)
    assert outcome.detail.startswith("step 'report': ")
    # The same step on the pristine state fails the same way: not the agent's doing.
    assert outcome.details["pristine_control"]["reason"] == "bad_reward"


@pytest.mark.parametrize("mode", [Mode.SHARED, Mode.CLEARED])
def test_the_next_steps_agent_sees_no_tests_of_the_step_before(
    mode: Mode, runtime: DockerRuntime, example: Callable[[str], Task]
) -> None:
    # The verifier ran in this container; as Harbor, it empties /tests before going on.
    agent = r"""
if [ ! -f /app/settings.ini ]; then
    echo threshold=50 > /app/settings.ini
elif [ -z "$(ls -A /tests 2>/dev/null)" ] && [ -z "$(ls -A /logs/verifier)" ]; then
    awk '$1 > 50 { n++ } END { print n + 0 }' /app/readings.txt > /app/count.txt
fi
"""
    outcome = verify_task(example(TASK), AgentSpec.command(agent), runtime, VerifyOptions(mode))

    assert (outcome.status, outcome.score) == (Status.SUCCESS, 1.0), outcome.details
