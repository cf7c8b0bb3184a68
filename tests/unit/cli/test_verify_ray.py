"""``cleanroom verify --ray`` refuses what cannot run on a cluster in one line, exit 2:
no cluster at the address, no Ray installed; and ``--jobs``, which Ray's slots replace."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cleanroom.cli import app

FIX_MEDIAN = str(Path(__file__).resolve().parents[3] / "examples" / "tasks" / "fix-median")
# Nothing listens on port 1: refused at once, before Ray is asked.
NOWHERE = "127.0.0.1:1"


@pytest.mark.parametrize(
    "args",
    [[FIX_MEDIAN, "--solution"], [FIX_MEDIAN, "--container", "trial-1"]],
)
def test_a_cluster_that_cannot_be_joined_is_one_line_and_exit_2(args: list[str]) -> None:
    result = CliRunner().invoke(app, ["verify", *args, "--ray", NOWHERE, "--json"])
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert result.stderr.startswith(f"error: no Ray cluster at {NOWHERE}")
    assert result.stderr.count("\n") == 1


def test_without_ray_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray fails
    result = CliRunner().invoke(app, ["verify", FIX_MEDIAN, "--noop", "--ray", NOWHERE])
    assert result.exit_code == 2, result.output
    assert "pip install 'cleanroom[ray]'" in result.stderr
    assert result.stderr.count("\n") == 1


def test_jobs_is_for_one_machine() -> None:
    result = CliRunner().invoke(
        app, ["verify", FIX_MEDIAN, "--noop", "--ray", NOWHERE, "--jobs", "2"]
    )
    assert result.exit_code == 2
    assert "docker slots" in result.output
