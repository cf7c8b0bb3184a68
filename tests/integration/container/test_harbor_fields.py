"""Harbor task fields on real Docker: healthcheck, env templates, /logs inputs, prebuilt
images and the image map, the agent's network."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cleanroom.core.outcomes import Reason, Status
from cleanroom.verifiers.container.modes import Mode
from cleanroom.verifiers.container.runtime.docker import DockerRuntime
from cleanroom.verifiers.container.task import Task, load_task
from cleanroom.verifiers.container.verify import AgentSpec, VerifyOptions, verify_task

from .test_cli_verify import cleanroom, labelled

pytestmark = pytest.mark.docker

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "tasks"
SEALED = VerifyOptions(Mode.SEALED)


def copy_of(name: str, tmp_path: Path, toml_edit: tuple[str, str] | None = None) -> Path:
    root = tmp_path / f"{name}-copy"
    shutil.copytree(EXAMPLES / name, root)
    if toml_edit is not None:
        toml = root / "task.toml"
        text = toml.read_text()
        assert toml_edit[0] in text
        toml.write_text(text.replace(*toml_edit))
    return root


# That each example passes with its solution and fails with no action in sealed is what
# `cleanroom audit examples/tasks` checks for every example (no-op and repeated oracle,
# both sealed): tests/integration/audit/test_audit_examples.py.


def test_without_the_healthcheck_the_solution_starts_too_early(
    runtime: DockerRuntime, tmp_path: Path
) -> None:
    root = copy_of("healthcheck-service", tmp_path)
    text = (root / "task.toml").read_text()
    (root / "task.toml").write_text(text[: text.index("[environment.healthcheck]")])
    outcome = verify_task(load_task(root), AgentSpec.solution(), runtime, SEALED)
    assert (outcome.status, outcome.score) == (Status.FAILURE, 0.0)


def test_a_healthcheck_that_never_passes_is_an_environment_error(
    runtime: DockerRuntime, tmp_path: Path
) -> None:
    root = copy_of(
        "healthcheck-service",
        tmp_path,
        ('command = "test -f /var/lib/svc/ready"', 'command = "test -f /nowhere"'),
    )
    text = (root / "task.toml").read_text().replace("start_period_sec = 15", "start_period_sec = 0")
    (root / "task.toml").write_text(text)
    outcome = verify_task(load_task(root), AgentSpec.solution(), runtime, SEALED)
    assert (outcome.status, outcome.reason) == (Status.INVALID, Reason.ENVIRONMENT_ERROR)
    assert "before the agent phase" in outcome.detail
    assert "test -f /nowhere" in outcome.detail
    agents = [c for c in outcome.details["healthcheck"] if c["container"] == "agent"]
    assert agents == [{"container": "agent", "healthy": False, "attempts": 3}]


def test_templates_read_the_hosts_variables(
    runtime: DockerRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    task = load_task(EXAMPLES / "env-templates")
    monkeypatch.setenv("CLEANROOM_EXAMPLE_GREETING", "hi")
    # The agent's environment changed, the verifier's expectation did not: a 0.
    changed = verify_task(task, AgentSpec.solution(), runtime, SEALED)
    assert (changed.status, changed.score) == (Status.FAILURE, 0.0)
    monkeypatch.setenv("CLEANROOM_EXAMPLE_EXPECTED", "hi from the task")
    both = verify_task(task, AgentSpec.solution(), runtime, SEALED)
    assert (both.status, both.score) == (Status.SUCCESS, 1.0), both.detail


def test_a_template_the_host_cannot_fill_is_an_environment_error(
    runtime: DockerRuntime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CLEANROOM_NO_SUCH_VARIABLE", raising=False)
    root = copy_of(
        "env-templates",
        tmp_path,
        ('ANSWER_FILE = "/app/answer.txt"', 'ANSWER_FILE = "${CLEANROOM_NO_SUCH_VARIABLE}"'),
    )
    outcome = verify_task(load_task(root), AgentSpec.solution(), runtime, SEALED)
    assert (outcome.status, outcome.reason) == (Status.INVALID, Reason.ENVIRONMENT_ERROR)
    assert "solution.env.ANSWER_FILE" in outcome.detail
    assert "CLEANROOM_NO_SUCH_VARIABLE" in outcome.detail


def test_a_prebuilt_image_is_used_when_there_is_no_dockerfile(
    runtime: DockerRuntime, tmp_path: Path
) -> None:
    root = copy_of(
        "env-templates",
        tmp_path,
        (
            'network_mode = "no-network"',
            'network_mode = "no-network"\ndocker_image = "cleanroom/base:bookworm"',
        ),
    )
    (root / "environment" / "Dockerfile").unlink()
    task: Task = load_task(root)
    solved = verify_task(task, AgentSpec.solution(), runtime, SEALED)
    assert (solved.status, solved.score) == (Status.SUCCESS, 1.0), solved.detail
    assert solved.details["image"] == "cleanroom/base:bookworm"


@pytest.mark.parametrize("given", ["flag", "file"])
def test_the_image_map_rewrites_base_images_before_the_build(
    given: str, runtime: DockerRuntime, tmp_path: Path
) -> None:
    root = copy_of("logs-inputs", tmp_path)
    dockerfile = root / "environment" / "Dockerfile"
    dockerfile.write_text(
        dockerfile.read_text().replace("cleanroom/base:bookworm", "mirror.invalid/base:12")
    )
    file = tmp_path / "images.toml"
    file.write_text('[image_map]\n"mirror.invalid/base:12" = "cleanroom/base:bookworm"\n')
    how = (
        ["--image-map", "mirror.invalid/base:12=cleanroom/base:bookworm"]
        if given == "flag"
        else ["--image-map-file", str(file)]
    )
    mapped = cleanroom("verify", str(root), "--solution", *how, env=labelled(runtime))
    assert mapped.returncode == 0, mapped.stdout + mapped.stderr


@pytest.mark.parametrize(
    ("setting", "has_network"),
    [
        ("allow_internet = true", True),
        ("allow_internet = false", False),
        ('network_mode = "no-network"', False),
        ("", True),  # Harbor's default is public
    ],
)
def test_the_agent_phase_has_a_network_as_the_task_says(
    setting: str, has_network: bool, runtime: DockerRuntime, tmp_path: Path
) -> None:
    root = copy_of("logs-inputs", tmp_path, ('network_mode = "no-network"\n', f"{setting}\n"))
    # The right answer is written only where the agent sees a network interface.
    probe = AgentSpec.command("if [ -e /sys/class/net/eth0 ]; then echo 3 > /app/count.txt; fi")
    outcome = verify_task(load_task(root), probe, runtime, SEALED)
    assert outcome.score == (1.0 if has_network else 0.0), outcome.detail


def test_a_reward_the_image_holds_under_logs_is_neither_read_nor_the_agents(
    runtime: DockerRuntime, tmp_path: Path
) -> None:
    root = copy_of("logs-inputs", tmp_path)
    (root / "environment" / "reward.txt").write_text("1\n")
    dockerfile = root / "environment" / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text() + "COPY reward.txt /logs/verifier/reward.txt\n")
    task = load_task(root)
    for mode in (Mode.CLEARED, Mode.SEALED):
        idle = verify_task(task, AgentSpec.noop(), runtime, VerifyOptions(mode))
        assert (idle.status, idle.score, idle.reason) == (Status.FAILURE, 0.0, None), idle.detail
    solved = verify_task(task, AgentSpec.solution(), runtime, SEALED)
    assert (solved.status, solved.score) == (Status.SUCCESS, 1.0), solved.detail


@pytest.mark.parametrize(("setting", "has_network"), [('"public"', True), ('"no-network"', False)])
def test_the_sealed_verifier_has_a_network_only_when_the_task_asks(
    setting: str, has_network: bool, runtime: DockerRuntime, tmp_path: Path
) -> None:
    root = copy_of(
        "logs-inputs",
        tmp_path,
        (
            "timeout_sec = 60\n\n[environment]",
            f"timeout_sec = 60\nnetwork_mode = {setting}\n\n[environment]",
        ),
    )
    (root / "tests" / "test.sh").write_text(
        "#!/bin/bash\nif [ -e /sys/class/net/eth0 ]; then echo 1; else echo 0; fi"
        " > /logs/verifier/reward.txt\n"
    )
    outcome = verify_task(load_task(root), AgentSpec.noop(), runtime, SEALED)
    assert outcome.score == (1.0 if has_network else 0.0), outcome.detail
