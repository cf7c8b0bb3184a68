"""The real OSWorld rename task, checked in a local guest, through the API and the CLI."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from cleanroom.core.outcomes import Reason, Status
from cleanroom.guests import open_guest
from cleanroom.verifiers.osworld import CheckSettings, TaskRun, check_task, load_task

Cli = Callable[..., subprocess.CompletedProcess[str]]

OLD, NEW = "Desktop/todo_list_Jan_1", "Desktop/todo_list_Jan_2"


def test_setup_creates_the_folder_with_sudo(rename_task: Path, home: Path) -> None:
    with (
        open_guest("local", home=str(home)) as guest,
        TaskRun(load_task(rename_task), guest) as run,
    ):
        assert run.setup() is None
    assert (home / OLD).is_dir() and (home / OLD).stat().st_uid == 0


def test_renamed_folder_is_a_success(rename_task: Path, home: Path) -> None:
    task = load_task(rename_task)
    with open_guest("local", home=str(home)) as guest, TaskRun(task, guest) as run:
        assert run.setup() is None
        (home / OLD).rename(home / NEW)
        outcome = run.check()
    assert outcome.status is Status.SUCCESS and outcome.score == 1.0
    assert outcome.details["getters"][0]["value"] == "Directory exists.\n"


def test_folder_not_renamed_is_a_failure(rename_task: Path, home: Path) -> None:
    with open_guest("local", home=str(home)) as guest:
        outcome = check_task(load_task(rename_task), guest, run_setup=True)
    assert outcome.status is Status.FAILURE and outcome.score == 0.0
    assert outcome.details["getters"][0]["value"] == "Directory does not exist.\n"


def test_getter_timeout_is_invalid_checker_error(slow_rename_task: Path, home: Path) -> None:
    with open_guest("local", home=str(home)) as guest:
        outcome = check_task(
            load_task(slow_rename_task), guest, CheckSettings(getter_timeout=1), run_setup=True
        )
    assert outcome.status is Status.INVALID and outcome.reason is Reason.CHECKER_ERROR
    assert "1 s limit" in outcome.detail


def test_non_root_desktop_user_renames_with_the_same_outcome(
    rename_task: Path, desktop_user: str
) -> None:
    task = load_task(rename_task)
    with (
        open_guest("local", user=desktop_user) as guest,
        TaskRun(task, guest) as run,
    ):
        assert run.setup() is None
        moved = guest.exec(f"mv ~/{OLD} ~/{NEW}", shell=True, timeout=10)
        outcome = run.check()
    assert moved.exit_code == 0, moved.stderr
    assert outcome.status is Status.SUCCESS


def test_cli_exits_0_with_json_on_success(rename_task: Path, home: Path, cli: Cli) -> None:
    assert cli("osworld", "check", str(rename_task), "--home", str(home), "--setup").returncode == 1
    shutil.move(home / OLD, home / NEW)
    proc = cli(
        "osworld", "check", str(rename_task), "--guest", "local", "--home", str(home), "--json"
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert (data["outcome"], data["score"], data["reason"]) == ("success", 1.0, None)
    assert set(data) >= {"outcome", "score", "reason", "details"}


def test_cli_exits_1_with_json_on_failure(rename_task: Path, home: Path, cli: Cli) -> None:
    proc = cli("osworld", "check", str(rename_task), "--home", str(home), "--setup", "--json")
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["outcome"] == "failure"


def test_cli_exits_2_on_getter_timeout(slow_rename_task: Path, home: Path, cli: Cli) -> None:
    proc = cli(
        "osworld",
        "check",
        str(slow_rename_task),
        "--home",
        str(home),
        "--getter-timeout",
        "1",
        "--json",
    )
    assert proc.returncode == 2
    data = json.loads(proc.stdout)
    assert (data["outcome"], data["reason"]) == ("invalid", "checker_error")


def test_cli_exits_2_on_a_malformed_task_file(tmp_path: Path, cli: Cli) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"id": "x", "evaluator": {"func": ["exact_match"], "result": []}}')
    proc = cli("osworld", "check", str(bad), "--home", str(tmp_path / "h"))
    assert proc.returncode == 2
    assert "malformed task file" in proc.stderr and "bad.json" in proc.stderr


def test_cli_last_action_fail_scores_zero_without_running_getters(
    rename_task: Path, home: Path, cli: Cli
) -> None:
    proc = cli(
        "osworld", "check", str(rename_task), "--home", str(home), "--last-action", "FAIL", "--json"
    )
    assert (
        proc.returncode == 1
        and json.loads(proc.stdout)["details"]["scored_by"] == "last action FAIL"
    )


def test_cli_tasks_report_lists_all_37_and_the_gaps(cli: Cli) -> None:
    proc = cli(
        "osworld", "tasks", str(Path(__file__).parents[2] / "data" / "osworld" / "tasks"), "--json"
    )
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)["tasks"]
    assert len(rows) == 37
    blocked = {r["task"][:8]: r["unsupported"] for r in rows if not r["checkable"]}
    assert blocked == {"510f64c8": {"getters": ["vscode_config"], "metrics": [], "steps": []}}
    checkable = {r["task"][:8] for r in rows if r["checkable"]}
    # compare_archive is desktop-env's own, called in the checker environment
    assert "f7dfbef3" in checkable
