"""``cleanroom osworld coverage``, ``mirror`` and ``--mirror``, with task files the tests
write and a copy of the dataset served on loopback."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cleanroom.cli import app
from cleanroom.core.outcomes import EXIT_INVALID
from cleanroom.verifiers.osworld.mirror import DATASET_URL

from ..osworld.file_server import FileServer

RULE = {"type": "rule", "rules": {"expected": ""}}
GOLD = DATASET_URL + "os/b/gold.txt"


def _task_set(root: Path) -> Path:
    """An index of three tasks: one that runs here, one that needs a mirror, one lacking
    a metric."""
    tasks: dict[str, dict[str, Any]] = {
        "a": {"func": "exact_match", "result": {"type": "vm_command_line", "command": "true"}},
        "b": {
            "func": "compare_text_file",
            "result": {"type": "vm_file", "path": "/x", "dest": "x"},
            "expected": {"type": "cloud_file", "path": GOLD, "dest": "gold.txt"},
        },
        "c": {"func": "no_such_metric", "result": RULE},
    }
    for task_id, evaluator in tasks.items():
        evaluator.setdefault("expected", RULE)
        path = root / "examples/os" / f"{task_id}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"id": task_id, "evaluator": evaluator}))
    index = root / "test_all.json"
    index.write_text(json.dumps({"os": list(tasks)}))
    return index


@pytest.fixture()
def server() -> Iterator[FileServer]:
    s = FileServer()
    s.files["/os/b/gold.txt"] = b"gold"
    yield s
    s.close()


def test_coverage_json_counts_what_runs_here_with_a_mirror_and_what_lacks(
    tmp_path: Path,
) -> None:
    result = CliRunner().invoke(app, ["osworld", "coverage", str(_task_set(tmp_path)), "--json"])

    assert result.exit_code == 0, result.output
    total = json.loads(result.stdout)["domains"][-1]
    assert (total["tasks"], total["runs_here"], total["runs_with_mirror"]) == (3, 1, 1)
    assert total["lacking"] == 1


def test_coverage_markdown_is_a_page_with_every_task(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["osworld", "coverage", str(_task_set(tmp_path)), "--markdown"]
    )

    assert result.stdout.startswith("# OSWorld coverage")
    assert all(f"| `{t}` |" in result.stdout for t in "abc")


def test_coverage_of_a_malformed_task_names_it_and_exits_invalid(tmp_path: Path) -> None:
    index = _task_set(tmp_path)
    (tmp_path / "examples/os/c.json").write_text("{")

    result = CliRunner().invoke(app, ["osworld", "coverage", str(index), "--json"])

    assert result.exit_code == EXIT_INVALID
    report = json.loads(result.stdout)
    assert "c.json" in report["errors"][0] and len(report["tasks"]) == 2


def test_the_mirror_command_fills_a_folder_that_check_reads(
    tmp_path: Path, server: FileServer
) -> None:
    index = _task_set(tmp_path)
    folder = tmp_path / "mirror"

    filled = CliRunner().invoke(
        app, ["osworld", "mirror", str(index), "--to", str(folder), "--from", server.base]
    )

    assert filled.exit_code == 0, filled.output
    assert (folder / "os/b/gold.txt").read_bytes() == b"gold"
    assert "1 fetched" in filled.stdout


def test_the_mirror_command_exits_invalid_when_a_file_could_not_be_fetched(
    tmp_path: Path, server: FileServer
) -> None:
    server.files.clear()

    result = CliRunner().invoke(
        app,
        [
            "osworld",
            "mirror",
            str(_task_set(tmp_path)),
            "--to",
            str(tmp_path / "m"),
            "--from",
            server.base,
            "--json",
        ],
    )

    assert result.exit_code == EXIT_INVALID
    report = json.loads(result.stdout)
    assert report["counts"]["failed"] == 1 and "HTTP 404" in report["files"][0]["why"]


def test_check_with_a_mirror_folder_scores_against_the_mirrors_file(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "result.txt").write_text("gold")
    folder = tmp_path / "mirror"
    (folder / "os/b").mkdir(parents=True)
    (folder / "os/b/gold.txt").write_text("gold")
    task = tmp_path / "b.json"
    evaluator = {
        "func": "compare_text_file",
        "result": {"type": "vm_file", "path": str(home / "result.txt"), "dest": "r.txt"},
        "expected": {"type": "cloud_file", "path": GOLD, "dest": "gold.txt"},
    }
    task.write_text(json.dumps({"id": "b", "evaluator": evaluator}))

    passed = CliRunner().invoke(
        app,
        ["osworld", "check", str(task), "--home", str(home), "--mirror", str(folder), "--json"],
    )
    (folder / "os/b/gold.txt").unlink()
    missing = CliRunner().invoke(
        app,
        ["osworld", "check", str(task), "--home", str(home), "--mirror", str(folder), "--json"],
    )

    assert passed.exit_code == 0, passed.output
    assert missing.exit_code == EXIT_INVALID
    assert GOLD in json.loads(missing.stdout)["detail"]
