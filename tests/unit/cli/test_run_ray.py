"""``cleanroom run --ray`` and ``soak --ray`` refuse what cannot run in one line, exit 2,
before any run folder is made: no cluster at the address, no Ray installed, an unknown
check (refused before the cluster is asked)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cleanroom.cli import app

NOWHERE = "127.0.0.1:1"  # nothing listens on port 1: refused at once


@pytest.mark.parametrize("command", [["run"], ["soak", "--hours", "1"]])
def test_a_cluster_that_cannot_be_joined_is_one_line_and_exit_2(
    command: list[str], tmp_path: Path
) -> None:
    run = tmp_path / "run"
    result = CliRunner().invoke(app, [*command, "--ray", NOWHERE, "--run", str(run)])
    assert result.exit_code == 2, result.output
    assert result.stderr == f"error: no Ray cluster at {NOWHERE}: [Errno 111] Connection refused\n"
    assert not run.exists()


def test_an_unknown_check_is_refused_before_the_cluster_is_asked(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["run", "--ray", NOWHERE, "--tests", "bogus", "--run", str(tmp_path / "r")]
    )
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: no isolation test named bogus")


def test_without_ray_the_error_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray fails
    result = CliRunner().invoke(app, ["run", "--ray", NOWHERE, "--run", str(tmp_path / "r")])
    assert result.exit_code == 2, result.output
    assert "pip install 'cleanroom[ray]'" in result.stderr


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--ray", NOWHERE], "runs on one machine only"),
        (["--agent-action-space", "mouse"], "action space 'mouse'"),
        (["--agent-host", "example.org"], "is not an IP address"),
    ],
)
def test_outside_agents_refuse_what_they_cannot_serve(
    args: list[str], said: str, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    result = CliRunner().invoke(app, ["run", "--tasks", "osworld-agent", *args, "--run", str(run)])
    assert result.exit_code == 2, result.output
    assert said in result.output
    assert not run.exists()
