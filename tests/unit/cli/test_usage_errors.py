"""A user's own mistake reads as one: a task folder that is missing or no task, a run
folder or audit path that is not there is an error naming the file (and line), exit 4,
before anything runs; never an `invalid` outcome blamed on the infrastructure."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cleanroom.cli import app
from cleanroom.cli.shared import EXIT_USAGE

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "tasks" / "fix-median"


def malformed(tmp_path: Path) -> Path:
    task = tmp_path / "task"
    shutil.copytree(EXAMPLE, task)
    (task / "task.toml").write_text('version = "1.0"\n[verifier\ntimeout_sec = 3\n')
    return task


@pytest.mark.parametrize("agent", [["--noop"], ["--solution"], ["--container", "trial-1"]])
def test_a_malformed_task_toml_is_a_usage_error_with_its_file_and_line(
    tmp_path: Path, agent: list[str]
) -> None:
    task = malformed(tmp_path)

    result = CliRunner().invoke(app, ["verify", str(task), *agent])

    assert result.exit_code == EXIT_USAGE == 4, result.output
    assert result.stdout == ""
    assert result.stderr.startswith(f"error: {task / 'task.toml'}, line 2: not valid TOML")


def test_every_unusable_task_folder_is_named_before_anything_runs(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    bare = tmp_path / "bare"
    bare.mkdir()

    result = CliRunner().invoke(app, ["verify", str(EXAMPLE), str(missing), str(bare), "--noop"])

    assert result.exit_code == EXIT_USAGE, result.output
    lines = result.stderr.splitlines()
    assert [line.split(":")[1].strip() for line in lines] == [str(missing), str(bare)]
    assert "the folder itself is missing" in lines[0]


def test_a_run_folder_that_is_not_there_says_so(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["report", str(tmp_path / "no-run")])

    assert result.exit_code == EXIT_USAGE
    assert result.stderr == f"error: {tmp_path / 'no-run'}: no such run folder\n"


def test_a_folder_without_a_run_says_what_it_lacks(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["report", str(tmp_path)])

    assert result.exit_code == EXIT_USAGE
    assert "holds no run database" in result.stderr


def test_an_audit_of_a_path_that_is_not_there_fails_before_any_progress(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["audit", str(tmp_path / "gone"), str(EXAMPLE)])

    assert result.exit_code == EXIT_USAGE
    assert result.stderr == f"error: {tmp_path / 'gone'}: no such file or folder\n"
