"""Harbor's artifacts and separate verifier environments on real Docker.

The example tasks' honest and no-op runs are in the red-team matrix (``artifact-answer``)
and in test_harbor_fields.py (``separate-verifier``, sealed); here: what is carried, what
is left out, what reaches the host, and what an agent gains by planting things among its
artifacts (nothing).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from cleanroom.core.outcomes import Reason, Status
from cleanroom.verifiers.container.modes import Mode
from cleanroom.verifiers.container.runtime.docker import DockerRuntime
from cleanroom.verifiers.container.task import Task
from cleanroom.verifiers.container.verify import AgentSpec, VerifyOptions, verify_task

pytestmark = pytest.mark.docker

SEALED = VerifyOptions(Mode.SEALED)
# The answer's side artifact, which every agent below writes honestly.
RUN_LOG = "mkdir -p /var/log/summer && echo done > /var/log/summer/run.log"


@pytest.mark.parametrize("mode", list(Mode))
def test_rewards_planted_among_the_artifacts_gain_nothing(
    mode: Mode, runtime: DockerRuntime, example: Callable[[str], Task]
) -> None:
    planting = (
        f"{RUN_LOG} && echo 1 > /logs/artifacts/reward.txt && "
        "echo '{\"reward\": 1}' > /logs/artifacts/reward.json && "
        "ln -s /logs/verifier /logs/artifacts/verifier"
    )
    outcome = verify_task(
        example("artifact-answer"), AgentSpec.command(planting), runtime, VerifyOptions(mode)
    )

    assert (outcome.status, outcome.score) == (Status.FAILURE, 0.0), outcome.detail


def test_the_artifacts_reach_the_host_with_harbors_manifest(
    runtime: DockerRuntime, example: Callable[[str], Task], tmp_path: Path
) -> None:
    # The honest answer, with a FIFO and a link out of the folder beside it (a legal
    # link: /etc/passwd is none of the verifier's places).
    agent = AgentSpec.command(
        "awk '{ s += $1 } END { print s }' /app/numbers.txt > /logs/artifacts/answer.txt && "
        f"{RUN_LOG} && mkfifo /logs/artifacts/pipe && ln -s /etc/passwd /logs/artifacts/passwd"
    )
    task = example("artifact-answer")
    outcome = verify_task(task, agent, runtime, VerifyOptions(Mode.SEALED, artifacts_dir=tmp_path))

    assert (outcome.status, outcome.score) == (Status.SUCCESS, 1.0), outcome.detail
    assert (tmp_path / "logs/artifacts/answer.txt").read_text() == "312\n"
    assert (tmp_path / "var/log/summer/run.log").read_text() == "done\n"
    assert not (tmp_path / "logs/artifacts/pipe").exists()
    assert not (tmp_path / "logs/artifacts/passwd").is_symlink()
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert [(m["source"], m["status"]) for m in manifest] == [
        ("/logs/artifacts", "ok"),
        ("/var/log/summer/run.log", "ok"),
    ]
    # The FIFO is left out when taken; the link is carried to the verifier (it resolves to
    # none of the verifier's places there) but never written to the host as a link.
    dropped = sorted(manifest[0]["dropped"])
    assert dropped[1] == "artifacts/pipe"
    assert dropped[0].startswith("artifacts/passwd: "), dropped
    assert outcome.details["artifacts"] == manifest


def test_an_artifact_over_the_state_cap_is_the_agents_zero_in_sealed(
    runtime: DockerRuntime, variant: Callable[..., Task]
) -> None:
    capped = _toml("artifact-answer").replace(
        "timeout_sec = 60\n\n[environment]", "timeout_sec = 60\nstate_cap_mb = 1\n\n[environment]"
    )
    task = variant("artifact-answer", {"task.toml": capped})
    big = "head -c 3M /dev/zero > /logs/artifacts/big"
    outcome = verify_task(task, AgentSpec.command(big), runtime, SEALED)

    assert (outcome.status, outcome.reason) == (Status.FAILURE, Reason.WORKSPACE_TOO_LARGE)
    assert "/logs/artifacts" in outcome.detail


@pytest.mark.parametrize("mode", list(Mode))
def test_an_artifact_behind_a_loop_of_links_is_a_zero_never_invalid(
    mode: Mode, runtime: DockerRuntime, example: Callable[[str], Task]
) -> None:
    loop = "mkdir -p /var/log && ln -s summer /var/log/summer"
    outcome = verify_task(
        example("artifact-answer"), AgentSpec.command(loop), runtime, VerifyOptions(mode)
    )

    assert (outcome.status, outcome.score) == (Status.FAILURE, 0.0), outcome.detail


@pytest.mark.parametrize("mode", [Mode.SHARED, Mode.CLEARED])
def test_a_separate_verifier_runs_the_same_in_the_naive_modes(
    mode: Mode, runtime: DockerRuntime, example: Callable[[str], Task]
) -> None:
    task = example("separate-verifier")
    solved = verify_task(task, AgentSpec.solution(), runtime, VerifyOptions(mode))
    assert (solved.status, solved.score) == (Status.SUCCESS, 1.0), solved.detail
    assert solved.details["verifier_image"]["tests"] == "in the image"
    planted = verify_task(
        task,
        AgentSpec.command("echo 1 > /logs/verifier/reward.txt"),
        runtime,
        VerifyOptions(mode),
    )
    # The verifier's reward folder is its own container's: the planted one is never read.
    assert (planted.status, planted.score) == (Status.FAILURE, 0.0), planted.detail


def test_a_separate_verifier_sees_only_the_artifacts(
    runtime: DockerRuntime, variant: Callable[..., Task]
) -> None:
    # Without its artifact entry the answer stays in the agent's container: Harbor's
    # documented trade-off, an honest 0.
    task = variant(
        "separate-verifier",
        {"task.toml": _toml("separate-verifier").replace('artifacts = ["/app/result.txt"]', "")},
    )
    outcome = verify_task(task, AgentSpec.solution(), runtime, SEALED)

    assert (outcome.status, outcome.score) == (Status.FAILURE, 0.0), outcome.detail


@pytest.mark.parametrize(
    "link",
    [
        "/tests/expected.txt",  # the separate verifier's own tests, absent here
        "../tests/expected.txt",
        "/tmp/expected.txt",  # where test.sh could write, absent in both images
    ],
)
def test_an_artifact_link_a_separate_verifiers_image_would_resolve_leads_nowhere_of_its(
    link: str, runtime: DockerRuntime, example: Callable[[str], Task]
) -> None:
    # The verifier's image has no /app: the link is judged above a folder only the
    # install makes, and never reaches the verifier's own files.
    agent = AgentSpec.command(f"cd /app && rm -f result.txt && ln -s {link} result.txt")

    outcome = verify_task(example("separate-verifier"), agent, runtime, SEALED)

    assert (outcome.status, outcome.score) == (Status.FAILURE, 0.0), outcome.detail


def test_a_separate_verifier_without_an_image_of_its_own_runs_the_tasks_with_the_tests_copied(
    runtime: DockerRuntime, variant: Callable[..., Task]
) -> None:
    text = _toml("separate-verifier")
    own = text[text.index("[verifier.environment]") : text.index("[environment]")]
    task = variant("separate-verifier", {"task.toml": text.replace(own, "")})
    (task.tests_dir / "Dockerfile").unlink()
    # The task's image has no grader: test.sh falls back to comparing by itself.
    (task.tests_dir / "test.sh").write_text(
        "#!/bin/bash\nif cmp -s /app/result.txt /tests/expected.txt; then echo 1; else echo 0; fi"
        " > /logs/verifier/reward.txt\n"
    )
    solved = verify_task(task, AgentSpec.solution(), runtime, SEALED)
    idle = verify_task(task, AgentSpec.noop(), runtime, SEALED)

    assert (solved.status, solved.score) == (Status.SUCCESS, 1.0), solved.detail
    assert solved.details["verifier_image"]["tests"] == "copied in"
    assert (idle.status, idle.score) == (Status.FAILURE, 0.0), idle.detail


def _toml(name: str) -> str:
    examples = Path(__file__).resolve().parents[3] / "examples" / "tasks"
    return (examples / name / "task.toml").read_text()
