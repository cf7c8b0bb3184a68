"""Setup steps and file getters against a real guest and a local HTTP server."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from cleanroom.core.outcomes import Reason, Status
from cleanroom.guests import open_guest
from cleanroom.lifecycle import wait_until
from cleanroom.verifiers.osworld import CheckSettings, check_task, parse_task

FAST = CheckSettings(download_timeout=5, getter_timeout=10)


def task(evaluator: dict[str, Any], config: list[Any] | None = None) -> Any:
    return parse_task({"id": "t", "config": config or [], "evaluator": evaluator}, "t.json")


def download(url: str, path: str) -> dict[str, Any]:
    return {"type": "download", "parameters": {"files": [{"url": url, "path": path}]}}


def test_download_puts_the_file_at_a_home_relative_path(
    http_files: tuple[str, Path], home: Path
) -> None:
    url, served = http_files
    (served / "setup.sh").write_text("echo ready\n")
    t = task({"func": "infeasible"}, [download(f"{url}/setup.sh", "setup.sh")])
    with open_guest("local", home=str(home)) as guest:
        outcome = check_task(t, guest, FAST, run_setup=True)
    assert outcome.valid and (home / "setup.sh").read_text() == "echo ready\n"


def test_failed_download_is_an_environment_error_naming_the_step(
    http_files: tuple[str, Path], home: Path
) -> None:
    url, _ = http_files
    config = [{"type": "sleep", "parameters": {"seconds": 0}}, download(f"{url}/absent", "x")]
    with open_guest("local", home=str(home)) as guest:
        outcome = check_task(task({"func": "infeasible"}, config), guest, FAST, run_setup=True)
    assert outcome.reason is Reason.ENVIRONMENT_ERROR
    assert "config step 1 (download)" in outcome.detail and "HTTP 404" in outcome.detail


def test_vm_file_against_cloud_file_scores_the_line_ratio(
    http_files: tuple[str, Path], home: Path
) -> None:
    url, served = http_files
    (served / "gold.txt").write_text("a\nb\nc\nd\n")
    evaluator = {
        "func": "diff_text_file",
        "result": {"type": "vm_file", "path": "~/Desktop/out.txt", "dest": "out.txt"},
        "expected": {"type": "cloud_file", "path": f"{url}/gold.txt", "dest": "gold.txt"},
    }
    with open_guest("local", home=str(home)) as guest:
        guest.write_file("Desktop/out.txt", b"a\nb\nx\ny\n")
        outcome = check_task(task(evaluator), guest, FAST)
    assert outcome.status is Status.FAILURE and outcome.score == 0.5


def test_cloud_file_that_cannot_be_fetched_is_a_checker_error(
    http_files: tuple[str, Path], home: Path
) -> None:
    url, _ = http_files
    evaluator = {
        "func": "compare_text_file",
        "result": {"type": "vm_file", "path": "out.txt", "dest": "out.txt"},
        "expected": {"type": "cloud_file", "path": f"{url}/gone.txt", "dest": "gold.txt"},
    }
    with open_guest("local", home=str(home)) as guest:
        guest.write_file("out.txt", b"x")
        outcome = check_task(task(evaluator), guest, FAST)
    assert outcome.reason is Reason.CHECKER_ERROR and "gone.txt" in outcome.detail


def test_postconfig_stdout_feeds_check_list_through_the_cache(home: Path) -> None:
    evaluator = {
        "postconfig": [
            {
                "type": "execute",
                "parameters": {"command": "ls ~/Desktop", "shell": True, "stdout": "ls.out"},
            }
        ],
        "func": "check_list",
        "result": {"type": "cache_file", "path": "ls.out"},
        "expected": {"type": "rule", "rules": {"expect": ["^report\\.txt$"], "unexpect": ["tmp"]}},
    }
    with open_guest("local", home=str(home)) as guest:
        guest.write_file("Desktop/report.txt", b"")
        outcome = check_task(task(evaluator), guest, FAST)
    assert outcome.status is Status.SUCCESS


def test_launch_starts_the_program_without_waiting(home: Path) -> None:
    config = [
        {"type": "launch", "parameters": {"command": "sh -c 'sleep 0.3; touch up'", "shell": True}}
    ]
    with open_guest("local", home=str(home)) as guest:
        started = time.monotonic()
        outcome = check_task(task({"func": "infeasible"}, config), guest, FAST, run_setup=True)
        assert time.monotonic() - started < 0.3
        assert wait_until((home / "up").exists, 10)
    assert outcome.details["config"][0]["started"] is True


def test_details_show_each_setup_step(rename_task: Path, home: Path) -> None:
    data = json.loads(rename_task.read_text())
    with open_guest("local", home=str(home)) as guest:
        outcome = check_task(parse_task(data, rename_task), guest, FAST, run_setup=True)
    steps = outcome.details["config"]
    assert [s["index"] for s in steps] == [0, 1] and steps[0]["returncode"] == 0
