"""Evaluation order and the error policy, with a scripted guest (no processes, no Docker)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cleanroom.core.outcomes import Reason, Status
from cleanroom.exec_result import ExecResult
from cleanroom.guests.base import (
    Command,
    CommandNotStarted,
    Guest,
    GuestError,
    GuestTimeout,
)
from cleanroom.host_files import NotARegularFile
from cleanroom.verifiers.osworld.evaluator import check_task, is_fail_action
from cleanroom.verifiers.osworld.settings import CheckSettings
from cleanroom.verifiers.osworld.task import Task, parse_task


class ScriptedGuest(Guest):
    """Answers each command from a script: output bytes, or an exception to raise."""

    kind = "scripted"

    def __init__(self, script: dict[str, Any], files: dict[str, bytes] | None = None) -> None:
        self.script = script
        self.files = files or {}
        self.ran: list[tuple[Command, bool]] = []

    @property
    def home(self) -> str:
        return "/home/user"

    def exec(
        self, command: Command, *, shell: bool, timeout: float, user: str | None = None
    ) -> ExecResult:
        self.ran.append((command, shell))
        key = command if isinstance(command, str) else " ".join(command)
        answer = self.script.get(key, b"")
        if isinstance(answer, Exception):
            raise answer
        if isinstance(answer, tuple):
            return ExecResult(exit_code=0, stdout=answer[0], stderr=answer[1])
        return ExecResult(exit_code=0, stdout=answer)

    def spawn(self, command: Command, *, shell: bool, user: str | None = None) -> None:
        self.ran.append((command, shell))

    def read_file(self, path: str) -> bytes:
        if path not in self.files:
            raise FileNotFoundError(2, "No such file", path)
        return self.files[path]

    def write_file(self, path: str, data: bytes) -> None:
        self.files[path] = data

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind}

    def fresh(self) -> Guest:
        return ScriptedGuest(dict(self.script))


def task(evaluator: dict[str, Any], config: list[Any] | None = None) -> Task:
    return parse_task({"id": "t", "config": config or [], "evaluator": evaluator}, "t.json")


def cmd(command: Any, **extra: Any) -> dict[str, Any]:
    return {"type": "vm_command_line", "command": command, **extra}


def rule(**rules: Any) -> dict[str, Any]:
    return {"type": "rule", "rules": rules}


@pytest.fixture()
def settings(tmp_path: Path) -> CheckSettings:
    return CheckSettings(cache_root=str(tmp_path / "cache"), getter_timeout=5)


def test_exact_output_passes(settings: CheckSettings) -> None:
    t = task(
        {"func": "exact_match", "result": cmd("c", shell=True), "expected": rule(expected="ok\n")}
    )
    outcome = check_task(t, ScriptedGuest({"c": b"ok\n"}), settings)
    assert outcome.status is Status.SUCCESS and outcome.score == 1.0


def test_missing_trailing_newline_fails(settings: CheckSettings) -> None:
    t = task(
        {"func": "exact_match", "result": cmd("c", shell=True), "expected": rule(expected="ok\n")}
    )
    outcome = check_task(t, ScriptedGuest({"c": b"ok"}), settings)
    assert outcome.status is Status.FAILURE and outcome.score == 0.0


def test_shell_string_true_runs_through_the_shell(settings: CheckSettings) -> None:
    guest = ScriptedGuest({})
    t = task(
        {"func": "check_include_exclude", "result": cmd("a | b", shell="true"), "expected": rule()}
    )
    check_task(t, guest, settings)
    assert guest.ran == [("a | b", True)]


def test_vm_command_error_reads_stderr(settings: CheckSettings) -> None:
    t = task(
        {
            "func": "check_include_exclude",
            "result": {"type": "vm_command_error", "command": ["py"]},
            "expected": rule(exclude=["Error:"]),
        }
    )
    outcome = check_task(t, ScriptedGuest({"py": (b"", b"Error: no module\n")}), settings)
    assert outcome.status is Status.FAILURE


def test_getter_timeout_is_a_checker_error_not_a_zero(settings: CheckSettings) -> None:
    t = task(
        {"func": "exact_match", "result": cmd("slow", shell=True), "expected": rule(expected="")}
    )
    outcome = check_task(t, ScriptedGuest({"slow": GuestTimeout("slow", 5)}), settings)
    assert outcome.status is Status.INVALID and outcome.reason is Reason.CHECKER_ERROR
    assert "5 s limit" in outcome.detail


def test_guest_failure_is_a_checker_error(settings: CheckSettings) -> None:
    t = task({"func": "exact_match", "result": cmd("c", shell=True), "expected": rule(expected="")})
    outcome = check_task(t, ScriptedGuest({"c": GuestError("container gone")}), settings)
    assert outcome.reason is Reason.CHECKER_ERROR and "container gone" in outcome.detail


def test_command_not_started_is_a_checker_error(settings: CheckSettings) -> None:
    t = task({"func": "exact_match", "result": cmd(["gsettings"]), "expected": rule(expected="")})
    guest = ScriptedGuest({"gsettings": CommandNotStarted(["gsettings"], "not found")})
    assert check_task(t, guest, settings).reason is Reason.CHECKER_ERROR


def test_metric_that_raises_is_a_checker_error(settings: CheckSettings) -> None:
    t = task(
        {
            "func": "check_gnome_favorite_apps",
            "result": cmd("c", shell=True),
            "expected": rule(expected=[]),
        }
    )
    outcome = check_task(t, ScriptedGuest({"c": b"not a list"}), settings)
    assert outcome.reason is Reason.CHECKER_ERROR and "check_gnome_favorite_apps" in outcome.detail


def test_missing_result_file_scores_zero_like_osworld(settings: CheckSettings) -> None:
    t = task(
        {
            "func": "compare_config",
            "result": {"type": "vm_file", "path": "/x", "dest": "x"},
            "expected": rule(expected=""),
        }
    )
    outcome = check_task(t, ScriptedGuest({}), settings)
    assert outcome.status is Status.FAILURE and outcome.score == 0.0


def test_result_file_is_copied_into_the_cache(settings: CheckSettings) -> None:
    t = task(
        {
            "func": "compare_config",
            "result": {"type": "vm_file", "path": "/x", "dest": "x"},
            "expected": rule(expected="project"),
        }
    )
    outcome = check_task(t, ScriptedGuest({}, {"/x": b"project"}), settings)
    assert outcome.status is Status.SUCCESS
    assert Path(outcome.details["cache_dir"], "x").read_bytes() == b"project"


def test_conj_or_passes_when_one_check_passes(settings: CheckSettings) -> None:
    t = task(
        {
            "func": ["exact_match", "exact_match"],
            "conj": "or",
            "result": [cmd("a", shell=True), cmd("b", shell=True)],
            "expected": [rule(expected="1\n"), rule(expected="1\n")],
        }
    )
    outcome = check_task(t, ScriptedGuest({"a": b"0\n", "b": b"1\n"}), settings)
    assert outcome.status is Status.SUCCESS and outcome.score == 1.0


def test_conj_or_stops_at_the_first_pass(settings: CheckSettings) -> None:
    guest = ScriptedGuest({"a": b"1\n", "b": GuestTimeout("b", 1)})
    t = task(
        {
            "func": ["exact_match", "exact_match"],
            "conj": "or",
            "result": [cmd("a", shell=True), cmd("b", shell=True)],
            "expected": [rule(expected="1\n"), rule(expected="1\n")],
        }
    )
    assert check_task(t, guest, settings).score == 1.0
    assert [c for c, _ in guest.ran] == ["a"]


def test_conj_or_without_a_pass_takes_the_max(settings: CheckSettings) -> None:
    t = task(
        {
            "func": ["fuzzy_match", "fuzzy_match"],
            "conj": "or",
            "result": [cmd("a", shell=True), cmd("b", shell=True)],
            "expected": [rule(expected="abcd"), rule(expected="abcd")],
        }
    )
    outcome = check_task(t, ScriptedGuest({"a": b"abce", "b": b"zzzz"}), settings)
    assert outcome.status is Status.FAILURE and outcome.score == pytest.approx(0.75)


def test_conj_and_keeps_fractional_scores_as_the_mean(settings: CheckSettings) -> None:
    t = task(
        {
            "func": ["fuzzy_match", "exact_match"],
            "result": [cmd("a", shell=True), cmd("b", shell=True)],
            "expected": [rule(expected="abcd"), rule(expected="y")],
        }
    )
    outcome = check_task(t, ScriptedGuest({"a": b"abce", "b": b"y"}), settings)
    assert outcome.status is Status.FAILURE and outcome.score == pytest.approx(0.875)


def test_conj_and_stops_at_the_first_zero(settings: CheckSettings) -> None:
    guest = ScriptedGuest({"a": b"no", "b": GuestTimeout("b", 1)})
    t = task(
        {
            "func": ["exact_match", "exact_match"],
            "result": [cmd("a", shell=True), cmd("b", shell=True)],
            "expected": [rule(expected="yes"), rule(expected="yes")],
        }
    )
    outcome = check_task(t, guest, settings)
    assert outcome.score == 0.0 and outcome.details["stopped_early"] is True


def test_metric_without_expected_gets_only_the_result(settings: CheckSettings) -> None:
    out = b"a\nb\nc\n                Time zone: Etc/UTC (UTC, +0000)\n"
    t = task({"func": "is_utc_0", "result": cmd("timedatectl status", shell=True)})
    assert check_task(t, ScriptedGuest({"timedatectl status": out}), settings).score == 1.0


def test_infeasible_scores_one_only_on_fail(settings: CheckSettings) -> None:
    t = task({"func": "infeasible"})
    assert check_task(t, ScriptedGuest({}), settings, last_action="FAIL").score == 1.0
    assert check_task(t, ScriptedGuest({}), settings, last_action="DONE").score == 0.0


def test_feasible_task_with_fail_as_last_action_scores_zero(settings: CheckSettings) -> None:
    t = task(
        {"func": "exact_match", "result": cmd("c", shell=True), "expected": rule(expected="ok")}
    )
    guest = ScriptedGuest({"c": b"ok"})
    outcome = check_task(t, guest, settings, last_action={"action_type": "FAIL"})
    assert outcome.status is Status.FAILURE and guest.ran == []


def test_postconfig_runs_before_getters_even_for_infeasible(settings: CheckSettings) -> None:
    guest = ScriptedGuest({})
    post = [{"type": "execute", "parameters": {"command": "prep {CLIENT_PASSWORD}", "shell": True}}]
    check_task(
        task({"func": "infeasible", "postconfig": post}), guest, settings, last_action="FAIL"
    )
    assert guest.ran == [("prep password", True)]


def test_getter_commands_get_no_placeholder_substitution(settings: CheckSettings) -> None:
    guest = ScriptedGuest({})
    t = task(
        {
            "func": "check_include_exclude",
            "result": cmd("echo {CLIENT_PASSWORD}", shell=True),
            "expected": rule(),
        }
    )
    check_task(t, guest, settings)
    assert guest.ran == [("echo {CLIENT_PASSWORD}", True)]


def test_unsupported_getter_is_refused_by_name(settings: CheckSettings) -> None:
    t = task({"func": "compare_config", "result": {"type": "vscode_config"}, "expected": rule()})
    outcome = check_task(t, ScriptedGuest({}), settings)
    assert outcome.reason is Reason.CHECKER_ERROR and "getter vscode_config" in outcome.detail


def test_unsupported_metric_is_refused_by_name(settings: CheckSettings) -> None:
    t = task({"func": "compare_image_text", "result": cmd("c"), "expected": rule()})
    outcome = check_task(t, ScriptedGuest({}), settings)
    assert outcome.reason is Reason.CHECKER_ERROR
    assert "metric compare_image_text (reads text with easyocr" in outcome.detail


def test_desktop_setup_step_is_an_environment_error_naming_the_step(
    settings: CheckSettings,
) -> None:
    t = task(
        {"func": "infeasible"},
        config=[
            {"type": "sleep", "parameters": {"seconds": 0}},
            {"type": "activate_window", "parameters": {"window_name": "x"}},
        ],
    )
    outcome = check_task(t, ScriptedGuest({}), settings, run_setup=True)
    assert outcome.reason is Reason.ENVIRONMENT_ERROR
    assert "config step 1 (activate_window)" in outcome.detail and "desktop" in outcome.detail


def test_setup_exit_code_is_recorded_not_checked(settings: CheckSettings) -> None:
    t = task(
        {"func": "infeasible"},
        config=[
            {
                "type": "execute",
                "parameters": {"command": ["python", "-c", "x({SCREEN_WIDTH_HALF})"]},
            }
        ],
    )
    guest = ScriptedGuest({"python -c x(960)": CommandNotStarted(["python"], "not found")})
    outcome = check_task(t, guest, settings, run_setup=True, last_action="FAIL")
    assert outcome.status is Status.SUCCESS
    assert outcome.details["config"][0]["started"] is False


def test_setup_stdout_is_saved_for_the_cache_file_getter(settings: CheckSettings) -> None:
    post = [{"type": "execute", "parameters": {"command": "ls", "shell": True, "stdout": "ls.out"}}]
    t = task(
        {
            "postconfig": post,
            "func": "check_list",
            "result": {"type": "cache_file", "path": "ls.out"},
            "expected": rule(expect=["^b$"]),
        }
    )
    assert check_task(t, ScriptedGuest({"ls": b"a\nb\n"}), settings).score == 1.0


def test_cache_file_never_written_is_a_checker_error(settings: CheckSettings) -> None:
    t = task(
        {
            "func": "check_list",
            "result": {"type": "cache_file", "path": "x.out"},
            "expected": rule(),
        }
    )
    assert check_task(t, ScriptedGuest({}), settings).reason is Reason.CHECKER_ERROR


def test_cache_is_cleared_before_each_run(settings: CheckSettings) -> None:
    post = [{"type": "execute", "parameters": {"command": "ls", "shell": True, "stdout": "ls.out"}}]
    writes = task({"postconfig": post, "func": "infeasible"})
    reads = task(
        {
            "func": "check_list",
            "result": {"type": "cache_file", "path": "ls.out"},
            "expected": rule(),
        }
    )
    check_task(writes, ScriptedGuest({"ls": b"a\n"}), settings)
    assert check_task(reads, ScriptedGuest({}), settings).reason is Reason.CHECKER_ERROR


def test_until_polls_until_the_condition_holds(settings: CheckSettings) -> None:
    answers = iter([b"wait\n", b"wait\n", b"ready\n"])

    class Polling(ScriptedGuest):
        def exec(
            self, command: Command, *, shell: bool, timeout: float, user: str | None = None
        ) -> ExecResult:
            return ExecResult(exit_code=0, stdout=next(answers))

    step = {
        "type": "execute",
        "parameters": {"command": "probe", "shell": True, "until": {"stdout": "ready"}},
    }
    outcome = check_task(
        task({"func": "infeasible"}, [step]), Polling({}), settings, run_setup=True
    )
    assert outcome.details["config"][0]["attempts"] == 3


@pytest.mark.parametrize(
    ("action", "fail"),
    [
        ("FAIL", True),
        ('{"action_type": "FAIL"}', True),
        ({"action_type": "FAIL"}, True),
        ("DONE", False),
        (None, False),
    ],
)
def test_fail_action_forms(action: Any, fail: bool) -> None:
    assert is_fail_action(action) is fail


def test_a_result_file_that_is_not_text_is_the_agents_zero_not_a_checker_error(
    settings: CheckSettings,
) -> None:
    t = task(
        {
            "func": "compare_config",
            "result": {"type": "vm_file", "path": "/x", "dest": "x"},
            "expected": rule(expected="project"),
        }
    )
    outcome = check_task(t, ScriptedGuest({}, {"/x": b"\xff\xfeproject"}), settings)

    assert (outcome.status, outcome.score) == (Status.FAILURE, 0.0)
    assert "not UTF-8" in outcome.details["metrics"][0]["result"]


def test_an_expected_file_that_is_not_text_is_still_a_checker_error(
    settings: CheckSettings,
) -> None:
    t = task(
        {
            "func": "compare_text_file",
            "result": {"type": "vm_file", "path": "/x", "dest": "x"},
            "expected": {"type": "vm_file", "path": "/y", "dest": "y"},
        }
    )
    files = {"/x": b"project", "/y": b"\xff\xfeproject"}
    outcome = check_task(t, ScriptedGuest({}, files), settings)

    assert outcome.reason is Reason.CHECKER_ERROR and "not UTF-8" in outcome.detail


class FifoAtResult(ScriptedGuest):
    def read_file(self, path: str) -> bytes:
        raise NotARegularFile(path, "a fifo")


def test_no_regular_file_at_the_result_path_scores_zero_like_a_missing_one(
    settings: CheckSettings,
) -> None:
    t = task(
        {
            "func": "compare_config",
            "result": {"type": "vm_file", "path": "/x", "dest": "x"},
            "expected": rule(expected=""),
        }
    )
    outcome = check_task(t, FifoAtResult({}), settings)

    assert (outcome.status, outcome.score) == (Status.FAILURE, 0.0)
    assert outcome.details["getters"][0]["not_a_regular_file"] == "not a regular file: a fifo"


def test_output_that_is_not_utf8_is_no_output_and_scores_0(settings: CheckSettings) -> None:
    """As OSWorld's server: a byte that is not UTF-8 gives the metric None, so the output
    around it is never scored (it would pass here and fail there)."""
    t = task(
        {
            "func": "check_include_exclude",
            "result": cmd("c", shell=True),
            "expected": rule(include=["ok"], exclude=[]),
        }
    )
    outcome = check_task(t, ScriptedGuest({"c": b"ok\xff\n"}), settings)
    assert (outcome.status, outcome.score) == (Status.FAILURE, 0.0)
    assert check_task(t, ScriptedGuest({"c": b"ok\n"}), settings).score == 1.0
