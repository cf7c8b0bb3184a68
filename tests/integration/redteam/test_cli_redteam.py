"""``cleanroom redteam`` prints the matrix, writes the HTML report and exits by the verdict."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from cleanroom.verifiers.container.runtime.docker import LABELS_ENV, DockerRuntime

pytestmark = pytest.mark.docker


def cleanroom(*args: str, rt: DockerRuntime | None = None) -> subprocess.CompletedProcess[str]:
    code = "from cleanroom.cli import main; main()"
    env = {**os.environ, "COLUMNS": "160"}
    if rt is not None:  # label what the command creates like this session, for cleanup
        env[LABELS_ENV] = ",".join(f"{k}={v}" for k, v in rt.labels.items())
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


def test_one_attack_as_json_and_html(runtime: DockerRuntime, tmp_path: Path) -> None:
    report = tmp_path / "matrix.html"

    done = cleanroom(
        "redteam", "--attack", "symlinked-reward-file", "--json", "--html", str(report)
    )

    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["verdict"]["passed"] is True
    assert [r["kind"] for r in data["rows"]] == ["honest", "noop", "attack"]
    page = report.read_text()
    assert set(re.findall(r"href='#([^']+)'", page)) <= set(re.findall(r"id='([^']+)'", page))
    assert "symlinked-reward-file" in page


def test_the_table_marks_shared_as_the_demonstrating_mode(runtime: DockerRuntime) -> None:
    done = cleanroom(
        "redteam",
        "--attack",
        "junk-padded",
        "--mode",
        "shared",
        "--mode",
        "sealed",
        rt=runtime,
    )

    assert done.returncode == 0, done.stderr
    assert "(demonstrates)" in done.stdout
    assert "PASS: attacks demonstrated 1/1; sealed held 1/1" in done.stdout


# The attacks where podman differs from Docker (a device node, an artifact's archive, a
# writer left running) and the rows of their tasks, on podman: the same verdicts.
PODMAN_ATTACKS = ("device-reward", "artifact-link-chain", "background-writer")


# The matrix on podman: in `make test-integrations` (the demo runs it on Docker in every
# run; sealed's 0 on podman is in every run through Harbor).
@pytest.mark.integrations
def test_the_matrix_on_podman_gives_docker_s_verdicts(podman: DockerRuntime) -> None:
    attacks = [arg for attack in PODMAN_ATTACKS for arg in ("--attack", attack)]
    done = cleanroom("redteam", *attacks, "--environment", "podman", "--json", rt=podman)

    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads(done.stdout)
    assert data["verdict"]["passed"] is True, data["verdict"]["line"]
    assert {r["attack"] for r in data["rows"] if r["kind"] == "attack"} == set(PODMAN_ATTACKS)
    verdicts = {r["id"]: r["cells"]["sealed"]["verdict"] for r in data["rows"]}
    assert verdicts["fix-median/device-reward"] == "held"
    assert verdicts["artifact-answer/honest"] == "honest ok"


def test_an_unknown_attack_exits_two() -> None:
    done = cleanroom("redteam", "--attack", "no-such-attack")

    assert done.returncode == 2
    assert "known:" in done.stderr
