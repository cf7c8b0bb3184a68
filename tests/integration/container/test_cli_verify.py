"""``cleanroom verify`` prints the outcome and exits 0 / 1 / 2."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from cleanroom.verifiers.container.runtime.docker import LABELS_ENV, DockerRuntime

pytestmark = pytest.mark.docker

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "tasks"


def cleanroom(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    code = "from cleanroom.cli import main; main()"
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, **(env or {})},
    )


def labelled(rt: DockerRuntime) -> dict[str, str]:
    """The environment that makes the command label what it creates like this session."""
    return {LABELS_ENV: ",".join(f"{k}={v}" for k, v in rt.labels.items())}


def test_the_solution_succeeds_with_the_json_shape(runtime: DockerRuntime) -> None:
    done = cleanroom(
        "verify", str(EXAMPLES / "csv-report"), "--solution", "--json", env=labelled(runtime)
    )

    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert list(data)[:6] == ["outcome", "score", "reason", "caused_by", "mode", "detail"]
    assert (data["outcome"], data["score"], data["mode"]) == ("success", 1.0, "sealed")
    details = data["details"]
    assert details["reward_source"] == "/logs/verifier/reward.txt"
    assert details["test_exit_code"] == 0
    assert details["tamper"] == []
    assert {"build_s", "agent_s", "verify_s", "total_s"} <= set(details["timings"])


def test_doing_nothing_is_a_failure_exiting_one(runtime: DockerRuntime) -> None:
    done = cleanroom(
        "verify", str(EXAMPLES / "csv-report"), "--noop", "--mode", "cleared", env=labelled(runtime)
    )

    assert done.returncode == 1, done.stderr
    assert "failure" in done.stdout


def test_a_dead_daemon_exits_two_as_verifier_unavailable(tmp_path: Path) -> None:
    socket = f"unix://{tmp_path}/no-docker.sock"

    done = cleanroom(
        "verify", str(EXAMPLES / "csv-report"), "--solution", "--json", env={"DOCKER_HOST": socket}
    )

    assert done.returncode == 2
    assert json.loads(done.stdout)["reason"] == "verifier_unavailable"


def test_choosing_no_agent_is_a_usage_error() -> None:
    done = cleanroom("verify", str(EXAMPLES / "csv-report"))

    assert done.returncode == 2
    assert "exactly one of" in done.stderr


def test_the_artifacts_are_collected_where_asked_and_printed(
    runtime: DockerRuntime, tmp_path: Path
) -> None:
    done = cleanroom(
        "verify",
        str(EXAMPLES / "artifact-answer"),
        "--solution",
        "--artifacts-dir",
        str(tmp_path),
        env=labelled(runtime),
    )

    assert done.returncode == 0, done.stderr
    printed = " ".join(done.stdout.split())  # the console wraps long lines
    assert "artifact /logs/artifacts: ok" in printed
    assert f"artifacts collected in {tmp_path}" in printed
    assert (tmp_path / "logs" / "artifacts" / "answer.txt").read_text() == "312\n"
    assert json.loads((tmp_path / "manifest.json").read_text())[1]["status"] == "ok"


def test_several_tasks_run_side_by_side_with_one_json_list(runtime: DockerRuntime) -> None:
    tasks = [EXAMPLES / "csv-report", EXAMPLES / "fix-median", EXAMPLES / "http-sum"]
    done = cleanroom(
        "verify", *map(str, tasks), "--noop", "--jobs", "3", "--json", env=labelled(runtime)
    )

    assert done.returncode == 1, done.stderr  # doing nothing fails every task
    data = json.loads(done.stdout)
    assert [d["details"]["task"] for d in data] == [t.name for t in tasks]  # the given order
    assert {d["outcome"] for d in data} == {"failure"}


def test_an_image_build_is_told_on_stderr_while_it_runs(
    runtime: DockerRuntime, tmp_path: Path
) -> None:
    task = tmp_path / "fresh-image"
    shutil.copytree(EXAMPLES / "fix-median", task)
    with (task / "environment" / "Dockerfile").open("a") as dockerfile:
        dockerfile.write(f"# {uuid.uuid4().hex}\n")  # an environment no image was built for

    done = cleanroom("verify", str(task), "--noop", "--json")

    assert done.returncode == 1, done.stderr
    told = [line for line in done.stderr.splitlines() if "fresh-image" in line]
    assert told[0].startswith("building the image cleanroom-task/fresh-image:"), done.stderr
    assert told[1].startswith("built cleanroom-task/fresh-image:")
    assert json.loads(done.stdout)["outcome"] == "failure"  # stdout is the JSON alone
