"""The corner cases from the review: hand-off files, no root entry, processes left running."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from cleanroom.core.outcomes import Status
from cleanroom.verifiers.container.modes import Mode
from cleanroom.verifiers.container.runtime.docker import DockerRuntime
from cleanroom.verifiers.container.task import Task
from cleanroom.verifiers.container.verify import AgentSpec, VerifyOptions, verify_task

pytestmark = pytest.mark.docker

NO_ROOT_DOCKERFILE = """FROM cleanroom/base:bookworm
RUN useradd --create-home --uid 1600 agent \\
 && sed -i '/^root:/d' /etc/passwd /etc/group /etc/shadow /etc/gshadow
WORKDIR /app
COPY --chown=1600:1600 stats.py /app/stats.py
"""
NO_ROOT_TOML = """[agent]
user = "agent"
[verifier]
timeout_sec = 60
[environment]
workdir = "/app"
"""
# Waits for test.sh, then rewrites a perfect reward (one written before cleared clears the
# folder is seen there, the agent's 0). Each write is a rename, so a read never catches the
# file truncated and empty.
WRITER = (
    'setsid nohup sh -c \'until grep -qs "/tests/tes[t]\\.sh" /proc/[0-9]*/cmdline;'
    " do sleep 0.005; done; while :; do echo 1 > /logs/verifier/.r"
    " && mv -f /logs/verifier/.r /logs/verifier/reward.txt; sleep 0.01; done'"
    " >/dev/null 2>&1 </dev/null &"
)


def test_the_engines_hand_off_file_survives_cleared(
    runtime: DockerRuntime, example: Callable[[str], Task]
) -> None:
    task = example("engine-handoff")

    outcome = verify_task(task, AgentSpec.solution(), runtime, VerifyOptions(Mode.CLEARED))

    assert (outcome.status, outcome.score) == (Status.SUCCESS, 1.0)
    tail = outcome.details["results"]["/work/events.tail.json"]
    assert tail["kind"] == "regular"
    assert [e["level"] for e in json.loads(tail["text"])["events"]] == ["error"] * 3


def test_cleared_removes_an_agent_owned_reward_in_an_image_with_no_root_entry(
    runtime: DockerRuntime, variant: Callable[..., Task]
) -> None:
    task = variant(
        "fix-median",
        {"environment/Dockerfile": NO_ROOT_DOCKERFILE, "task.toml": NO_ROOT_TOML},
        folder="fix-median-no-root",
    )
    image, _ = runtime.images.for_task(task)
    passwd = runtime.docker.client.containers.run(image, ["cat", "/etc/passwd"], remove=True)
    assert b"root:" not in passwd
    plant = AgentSpec.command("echo 1 > /logs/verifier/reward.txt && test $(id -u) = 1600")

    shared = verify_task(task, plant, runtime, VerifyOptions(Mode.SHARED))
    cleared = verify_task(task, plant, runtime, VerifyOptions(Mode.CLEARED))

    assert shared.details["agent_phase"]["exit_code"] == 0
    assert shared.score == 1.0  # the control: the agent's file is there to be removed
    assert (cleared.status, cleared.score) == (Status.FAILURE, 0.0)


def test_a_process_left_rewriting_the_reward_fools_cleared_its_known_limit(
    runtime: DockerRuntime, example: Callable[[str], Task]
) -> None:
    outcome = verify_task(
        example("fix-median"), AgentSpec.command(WRITER), runtime, VerifyOptions(Mode.CLEARED)
    )

    assert outcome.score == 1.0
    assert outcome.details["test_exit_code"] == 1


def test_a_process_left_rewriting_the_reward_does_not_fool_sealed(
    runtime: DockerRuntime, example: Callable[[str], Task]
) -> None:
    outcome = verify_task(
        example("fix-median"), AgentSpec.command(WRITER), runtime, VerifyOptions(Mode.SEALED)
    )

    assert (outcome.status, outcome.score) == (Status.FAILURE, 0.0)


def test_the_live_process_task_scores_one_in_sealed_with_its_honest_solution(
    runtime: DockerRuntime, example: Callable[[str], Task]
) -> None:
    outcome = verify_task(
        example("http-sum"), AgentSpec.solution(), runtime, VerifyOptions(Mode.SEALED)
    )

    assert (outcome.status, outcome.score) == (Status.SUCCESS, 1.0)
    assert outcome.details["tamper"] == []


def test_a_partial_reward_with_a_failing_exit_is_graded_by_that_reward(
    runtime: DockerRuntime, example: Callable[[str], Task]
) -> None:
    header_only = AgentSpec.command("printf 'region,total\\n' > /app/out/summary.csv")

    outcome = verify_task(example("csv-report"), header_only, runtime, VerifyOptions(Mode.SEALED))

    assert (outcome.status, outcome.score) == (Status.FAILURE, 0.6667)
    assert outcome.details["test_exit_code"] == 1
