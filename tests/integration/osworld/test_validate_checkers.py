"""``validate``: a checker must fail at t=0, pass after the oracle and fail after a no-op."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cleanroom.guests import open_guest
from cleanroom.verifiers.osworld import CheckSettings, load_task, validate_task

Cli = Callable[..., subprocess.CompletedProcess[str]]
ORACLE = "mv ~/Desktop/todo_list_Jan_1 ~/Desktop/todo_list_Jan_2"


def synthetic(tmp_path: Path, command: str, expected: str) -> Path:
    data = {
        "id": "synthetic",
        "config": [
            {"type": "execute", "parameters": {"command": "mkdir -p ~/Desktop/work", "shell": True}}
        ],
        "evaluator": {
            "func": "exact_match",
            "result": {"type": "vm_command_line", "command": command, "shell": True},
            "expected": {"type": "rule", "rules": {"expected": expected}},
        },
    }
    path = tmp_path / "synthetic.json"
    path.write_text(json.dumps(data))
    return path


def test_rename_checker_with_its_oracle_is_valid(rename_task: Path, cli: Cli) -> None:
    proc = cli(
        "osworld", "validate", str(rename_task), "--guest", "local", "--oracle", ORACLE, "--json"
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    verdict = json.loads(proc.stdout)
    assert verdict["verdict"] == "valid"
    assert [(p["phase"], p["outcome"]) for p in verdict["phases"]] == [
        ("t0", "failure"),
        ("oracle", "success"),
        ("noop", "failure"),
    ]


def test_checker_passing_at_t0_is_vacuous(tmp_path: Path, cli: Cli) -> None:
    task = synthetic(tmp_path, "echo ok", "ok\n")
    proc = cli("osworld", "validate", str(task), "--oracle", "true", "--json")
    assert proc.returncode == 1
    verdict = json.loads(proc.stdout)
    assert verdict["verdict"] == "vacuous" and "t=0" in verdict["problems"][0]


def test_checker_whose_getter_always_times_out_is_broken(tmp_path: Path, cli: Cli) -> None:
    task = synthetic(tmp_path, "sleep 30", "")
    proc = cli(
        "osworld", "validate", str(task), "--oracle", "true", "--getter-timeout", "1", "--json"
    )
    assert proc.returncode == 1
    verdict = json.loads(proc.stdout)
    assert verdict["verdict"] == "broken" and "checker_error" in verdict["problems"][0]


def test_checker_whose_getter_cannot_start_is_broken(tmp_path: Path) -> None:
    data = json.loads(synthetic(tmp_path, "x", "").read_text())
    data["evaluator"]["result"] = {"type": "vm_command_line", "command": ["no-such-checker-tool"]}
    path = tmp_path / "nostart.json"
    path.write_text(json.dumps(data))
    with open_guest("local") as base:
        verdict = validate_task(load_task(path), base, "true", CheckSettings(getter_timeout=5))
    assert verdict.verdict == "broken"
    assert all(
        p.outcome.reason and p.outcome.reason.value == "checker_error" for p in verdict.phases
    )


def test_wrong_oracle_is_reported_as_broken(rename_task: Path, cli: Cli) -> None:
    proc = cli("osworld", "validate", str(rename_task), "--oracle", "true")
    assert proc.returncode == 1
    assert "broken" in proc.stdout and "oracle" in proc.stdout


@pytest.mark.docker
def test_validation_runs_in_fresh_containers(
    tmp_path: Path, container: Any, docker_client: Any
) -> None:
    task = synthetic(tmp_path, "[ -f ~/Desktop/work/done ] && echo yes || echo no", "yes\n")
    with open_guest(f"docker:{container.name}") as base:
        verdict = validate_task(load_task(task), base, "touch ~/Desktop/work/done")
    assert verdict.valid, verdict.to_json()
    leftovers = docker_client.containers.list(all=True, filters={"label": "cleanroom.guest"})
    assert leftovers == []
