"""The answers probe's digests and reading, and finding the tasks to audit."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import pytest

from cleanroom.audit.jobs import AuditInputError, JobKind, find_jobs
from cleanroom.audit.probes import (
    FOUND_MARK,
    OracleProbe,
    answer_files,
    digests_of_tests,
    names_probe_script,
    oracle_probe_script,
    visible_answers,
)


def make_task(root: Path, name: str) -> Path:
    task = root / name
    (task / "tests").mkdir(parents=True)
    (task / "task.toml").write_text('version = "1.0"\n')
    return task


def test_answer_files_skip_files_too_short_to_tell_apart(tmp_path: Path) -> None:
    task = make_task(tmp_path, "t")
    (task / "tests" / "expected.txt").write_text("a long enough expected output, really\n")
    (task / "tests" / "__init__.py").write_text("")
    names = [f.name for f in answer_files(task)]
    assert names == ["tests/expected.txt"]


def test_visible_answers_name_the_copy_and_the_task_file_it_matches(tmp_path: Path) -> None:
    task = make_task(tmp_path, "t")
    data = b"a long enough expected output, really\n"
    (task / "tests" / "expected.txt").write_bytes(data)
    digest = hashlib.sha256(data).hexdigest()
    output = f"noise\n{FOUND_MARK} {digest} /opt/ref/copy.txt\n{FOUND_MARK} {'0' * 64} /x\n"
    assert visible_answers(output, answer_files(task)) == [
        {"path": "/opt/ref/copy.txt", "matches": "tests/expected.txt"}
    ]


def test_find_jobs_takes_a_folder_of_tasks_and_osworld_files(tmp_path: Path) -> None:
    make_task(tmp_path, "b-task")
    make_task(tmp_path, "a-task")
    (tmp_path / "rename.json").write_text("{}")
    (tmp_path / "rename.audit.toml").write_text('oracle = "true"\n')
    (tmp_path / "settings.json").write_text('{"evaluator": {}}')
    (tmp_path / "notes.txt").write_text("")
    jobs = find_jobs([tmp_path])
    assert [(j.kind, j.name) for j in jobs] == [
        (JobKind.CONTAINER, "a-task"),
        (JobKind.CONTAINER, "b-task"),
        (JobKind.OSWORLD, "rename"),
        (JobKind.OSWORLD_DESKTOP, "settings"),
    ]


def test_osworld_index_stands_for_every_task_it_names_and_is_no_task_in_a_folder(
    tmp_path: Path,
) -> None:
    (tmp_path / "examples" / "os").mkdir(parents=True)
    for task_id in ("b-id", "a-id"):
        (tmp_path / "examples" / "os" / f"{task_id}.json").write_text('{"evaluator": {}}')
    index = tmp_path / "test_all.json"
    index.write_text(json.dumps({"os": ["b-id", "a-id"]}))
    jobs = find_jobs([index])
    assert [(j.kind, j.name, Path(j.path).parent.name) for j in jobs] == [
        (JobKind.OSWORLD_DESKTOP, "a-id", "os"),
        (JobKind.OSWORLD_DESKTOP, "b-id", "os"),
    ]
    with pytest.raises(AuditInputError, match="no task here"):
        find_jobs([tmp_path])  # the index alone: a folder's indexes are left out


def test_an_index_naming_a_path_outside_its_examples_is_refused(tmp_path: Path) -> None:
    index = tmp_path / "test_all.json"
    index.write_text(json.dumps({"os": ["../../etc/passwd"]}))
    with pytest.raises(AuditInputError, match="is not a domain or task id"):
        find_jobs([index])


def test_the_same_task_given_twice_is_one_job(tmp_path: Path) -> None:
    task = make_task(tmp_path, "t")
    assert len(find_jobs([task, tmp_path])) == 1


def test_a_path_with_no_task_is_an_error_naming_it(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(AuditInputError, match="empty: no task here"):
        find_jobs([tmp_path / "empty"])


def test_answer_files_include_each_steps_tests_and_solution(tmp_path: Path) -> None:
    task = make_task(tmp_path, "t")
    step = task / "steps" / "configure"
    (step / "solution").mkdir(parents=True)
    (step / "solution" / "solve.sh").write_text(
        "#!/bin/bash\necho the configured answer > /app/x\n"
    )
    assert [f.name for f in answer_files(task)] == ["steps/configure/solution/solve.sh"]


def test_digests_of_tests_ignore_white_space_links_and_the_test_script(tmp_path: Path) -> None:
    tests = tmp_path / "tests"
    (tests / "data").mkdir(parents=True)
    (tests / "expected.txt").write_text(" 42 \n")
    (tests / "data" / "table.csv").write_text("a,b\r\n1,2\r\n")
    (tests / "test.sh").write_text("#!/bin/bash\n")
    (tests / "blank.txt").write_text(" \n")
    (tests / "link.txt").symlink_to(tests / "expected.txt")

    lines = digests_of_tests([tests]).decode().splitlines()

    assert lines == [
        f"{hashlib.sha256(b'a,b1,2').hexdigest()} /tests/data/table.csv",
        f"{hashlib.sha256(b'42').hexdigest()} /tests/expected.txt",
    ]


@pytest.mark.parametrize("probe", [p for p in OracleProbe if p is not OracleProbe.NAMES])
def test_every_oracle_probe_is_a_bash_script_bash_accepts(probe: OracleProbe) -> None:
    script = oracle_probe_script(probe, ["/app", "/logs/artifacts", "/odd name/it's"])

    checked = subprocess.run(["bash", "-n"], input=script, text=True, capture_output=True)

    assert checked.returncode == 0, checked.stderr
    assert "'/odd name/it'\"'\"'s'" in script  # roots are quoted for the shell


def test_the_names_probe_is_a_bash_script_bash_accepts_whatever_the_services_are_called() -> None:
    script = names_probe_script(["db", "it's"])

    checked = subprocess.run(["bash", "-n"], input=script, text=True, capture_output=True)

    assert checked.returncode == 0, checked.stderr
    assert "'it'\"'\"'s'" in script and "127.0.0.77" in script


def test_the_configured_tools_probe_counts_as_fooling_only_when_the_tests_ran_its_mark() -> None:
    from cleanroom.audit.findings import ContainerRuns, RunRecord, judge_container
    from cleanroom.audit.probes import RAN_MARK, ran_configuration

    def record(mode: str, tail: str, status: str = "failure") -> RunRecord:
        outcome = {"outcome": status, "score": 0.0, "details": {"test_output_tail": tail}}
        return RunRecord("probe configured-tools", mode, outcome)

    ran = record("shared", f"On branch main\n{RAN_MARK}: .git/hooks x\n")
    assert ran_configuration(ran.outcome)
    assert not ran_configuration(record("shared", "clean").outcome)
    noop = RunRecord("no-op", "sealed", {"outcome": "failure", "score": 0.0})
    runs = ContainerRuns(noop=noop, has_oracle=False)
    runs.probes["configured-tools"] = (ran, record("sealed", "", "failure"))
    flags = [f.flag.value for f in judge_container(runs).findings]
    assert flags == ["forgeable_shared"]
    runs.probes["configured-tools"] = (ran, record("sealed", f"{RAN_MARK}: x"))
    flags = [f.flag.value for f in judge_container(runs).findings]
    assert flags == ["forgeable_shared", "forgeable_sealed"]
