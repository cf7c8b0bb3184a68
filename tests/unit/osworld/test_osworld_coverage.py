"""What a task needs beyond cleanroom's checker pieces, decided from made-up task files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cleanroom.verifiers.osworld.coverage import (
    MissingPiece,
    Need,
    by_domain,
    coverage_json,
    coverage_markdown,
    missing_pieces,
    task_coverage,
    task_needs,
    web_urls,
)
from cleanroom.verifiers.osworld.mirror import DATASET_URL
from cleanroom.verifiers.osworld.task import Task, parse_task
from cleanroom.verifiers.osworld.task_list import read_task_list

REPO = Path(__file__).resolve().parents[3]
TASK_SET = "tests/data/osworld/evaluation_examples/test_all.json"
PAGE = REPO / "docs/osworld-coverage.md"

CHECKED = {  # a metric and getters cleanroom implements
    "func": "exact_match",
    "result": {"type": "vm_command_line", "command": "true"},
    "expected": {"type": "rule", "rules": {"expected": ""}},
}


def make(
    config: list[dict[str, Any]] | None = None,
    evaluator: dict[str, Any] | None = None,
    *,
    instruction: str = "Do it.",
    related_apps: list[str] | None = None,
    domain: str = "os",
    task_id: str = "t",
    **extra: Any,
) -> Task:
    data = {
        "id": task_id,
        "instruction": instruction,
        "config": config or [],
        "evaluator": evaluator or CHECKED,
        "related_apps": related_apps or [],
        **extra,
    }
    return parse_task(data, f"{domain}/{task_id}.json")


def step(kind: str, **parameters: Any) -> dict[str, Any]:
    return {"type": kind, "parameters": parameters}


def download(url: str) -> dict[str, Any]:
    return step("download", files=[{"url": url, "path": "/home/user/f"}])


# -- the needs ----------------------------------------------------------------------------


def test_a_task_with_only_commands_and_rules_needs_nothing() -> None:
    assert task_needs(make([step("execute", command=["ls"])])) == frozenset()


def test_a_download_step_needs_a_mirror() -> None:
    assert task_needs(make([download(DATASET_URL + "os/t/f.txt")])) == {Need.MIRROR}


def test_a_cloud_file_getter_needs_a_mirror() -> None:
    evaluator = {**CHECKED, "expected": {"type": "cloud_file", "path": DATASET_URL + "a/b/c"}}

    assert task_needs(make(evaluator=evaluator)) == {Need.MIRROR}


def test_a_tab_opened_on_a_live_site_needs_the_live_web() -> None:
    t = make([step("chrome_open_tabs", urls_to_open=["https://www.example.com/page"])])

    assert Need.LIVE_WEB in task_needs(t)
    assert web_urls(t) == ("https://www.example.com/page",)


def test_a_live_url_in_the_instruction_needs_the_live_web() -> None:
    t = make(instruction="Save the blog at https://blog.example.org/post as a PDF.")

    assert task_needs(t) == {Need.LIVE_WEB}


def test_a_live_url_a_rule_expects_needs_the_live_web() -> None:
    evaluator = {**CHECKED, "expected": {"type": "rule", "rules": {"expected": "https://x.org/"}}}

    assert task_needs(make(evaluator=evaluator)) == {Need.LIVE_WEB}


def test_a_live_url_in_a_metrics_options_needs_the_live_web() -> None:
    evaluator = {**CHECKED, "options": {"reference": "http://site.example/"}}

    assert task_needs(make(evaluator=evaluator)) == {Need.LIVE_WEB}


@pytest.mark.parametrize(
    "command",
    [
        "echo {CLIENT_PASSWORD} | sudo -S apt install jq -y",
        "sudo apt-get -y install expect",
        "pip install numpy",
        ["pip3", "install", "requests"],
        "pip install /home/user/local.whl requests",
        "sudo apt-get install -y xsel && xsel -bc",
    ],
)
def test_a_setup_command_that_installs_packages_needs_the_live_web(command: Any) -> None:
    assert task_needs(make([step("execute", command=command, shell=True)])) == {Need.LIVE_WEB}


@pytest.mark.parametrize(
    "command",
    [
        ["pip", "install", "/home/user/cssselect-1.3.0-py3-none-any.whl"],
        "sudo apt install -y ./tool.deb && tool --version",
    ],
)
def test_installing_a_package_from_a_path_in_the_guest_is_not_the_live_web(command: Any) -> None:
    assert task_needs(make([step("execute", command=command)])) == frozenset()


def test_the_tasks_source_and_dataset_urls_are_not_the_live_web() -> None:
    t = make(
        [download(DATASET_URL + "os/t/f.txt")],
        source="https://askubuntu.com/questions/1",
    )

    assert task_needs(t) == {Need.MIRROR}


@pytest.mark.parametrize("url", ["http://localhost:8080/", "http://127.0.0.1:5000/x"])
def test_a_loopback_url_is_not_the_live_web(url: str) -> None:
    assert task_needs(make([step("chrome_open_tabs", urls_to_open=[url])])) == frozenset()


@pytest.mark.parametrize(
    ("config", "evaluator"),
    [
        ([step("googledrive", settings_file="s.yml", operation=["delete"], args=[{}])], None),
        ([step("login", settings_file="s.json", platform="googledrive")], None),
        ([], {**CHECKED, "result": {"type": "googledrive_file", "path": "x", "dest": "y"}}),
    ],
)
def test_google_drive_and_logins_need_an_account(
    config: list[dict[str, Any]], evaluator: dict[str, Any] | None
) -> None:
    assert Need.ACCOUNT in task_needs(make(config, evaluator))


@pytest.mark.parametrize(
    ("config", "apps", "evaluator"),
    [
        ([], ["vscode"], None),
        ([], ["vs_code", "gimp"], None),
        ([step("launch", command=["code", "/home/user/project"])], ["libreoffice_writer"], None),
        ([step("launch", command="code -g file.py")], [], None),
        ([], [], {**CHECKED, "result": {"type": "vscode_config", "vscode_extension_command": ""}}),
    ],
)
def test_vs_code_by_its_app_its_program_or_its_getter(
    config: list[dict[str, Any]], apps: list[str], evaluator: dict[str, Any] | None
) -> None:
    assert Need.VS_CODE in task_needs(make(config, evaluator, related_apps=apps))


def test_a_program_whose_name_starts_with_code_is_not_vs_code() -> None:
    assert task_needs(make([step("launch", command=["codec-info"])])) == frozenset()


@pytest.mark.parametrize(
    ("config", "evaluator"),
    [
        ([], {**CHECKED, "result": {"type": "vm_command_line", "command": "timedatectl status"}}),
        ([step("execute", command=["systemctl", "--user", "restart", "x"])], None),
        ([step("execute", command="sudo /usr/bin/hostnamectl set-hostname a", shell=True)], None),
    ],
)
def test_a_tool_of_the_service_manager_in_a_step_or_a_getter_needs_a_system_service(
    config: list[dict[str, Any]], evaluator: dict[str, Any] | None
) -> None:
    assert task_needs(make(config, evaluator)) == {Need.SYSTEM_SERVICE}


def test_a_word_that_only_contains_a_service_tools_name_needs_no_system_service() -> None:
    command = "cat /home/user/my-systemctl-notes.txt; echo timedatectl_status"
    assert task_needs(make([step("execute", command=command, shell=True)])) == frozenset()


# -- what runs ----------------------------------------------------------------------------


def test_a_task_with_every_piece_and_no_needs_runs_here() -> None:
    row = task_coverage(make())

    assert row.complete and row.runs_here and not row.runs_with_mirror


def test_a_task_with_every_piece_that_downloads_runs_with_a_mirror() -> None:
    row = task_coverage(make([download(DATASET_URL + "os/t/f.txt")]))

    assert row.runs_with_mirror and not row.runs_here


def test_a_task_that_needs_the_web_besides_a_mirror_does_not_run() -> None:
    row = task_coverage(
        make(
            [
                download(DATASET_URL + "os/t/f"),
                step("chrome_open_tabs", urls_to_open=["https://example.org/"]),
            ]
        ),
    )

    assert not row.runs_here and not row.runs_with_mirror


def test_a_missing_metric_getter_and_step_are_each_named() -> None:
    evaluator = {"func": "no_such_metric", "result": {"type": "no_such_getter"}}

    row = task_coverage(make([step("no_such_step")], evaluator))

    assert row.lacks == ("getter no_such_getter", "metric no_such_metric", "step no_such_step")
    assert not row.complete


def test_a_step_the_pools_desktops_run_is_not_missing() -> None:
    row = task_coverage(make([step("activate_window", window_name="Writer")]))

    assert row.complete


def test_counts_per_domain_end_with_the_total() -> None:
    rows = [
        task_coverage(make(domain="os", task_id="a")),
        task_coverage(make([download(DATASET_URL + "x/y/z")], domain="gimp", task_id="b")),
        task_coverage(make(evaluator={"func": "nope", "result": CHECKED["result"]}, task_id="c")),
    ]

    counts = {d.domain: d for d in by_domain(rows)}

    assert list(counts) == ["os", "gimp", "total"]
    assert (counts["os"].tasks, counts["os"].runs_here, counts["os"].lacking) == (2, 1, 1)
    assert counts["gimp"].runs_with_mirror == 1 and counts["total"].needs[Need.MIRROR] == 1
    assert missing_pieces(rows) == [MissingPiece("metric nope", 1, 1)]


def test_a_piece_counts_the_tasks_it_alone_keeps_from_completion() -> None:
    alone = {"func": "nope", "result": CHECKED["result"]}
    with_another = {"func": "nope", "result": {"type": "nor_this"}}
    rows = [
        task_coverage(make(evaluator=alone, task_id="a")),
        task_coverage(make(evaluator=with_another, task_id="b")),
    ]

    assert missing_pieces(rows) == [
        MissingPiece("metric nope", 2, 1),
        MissingPiece("getter nor_this", 1, 0),
    ]


def test_the_json_report_carries_the_rules_counts_and_rows() -> None:
    report = coverage_json([task_coverage(make())], [])

    assert set(report["rules"]) == {n.value for n in Need}
    assert report["tasks"][0]["runs_here"] is True
    assert report["domains"][-1]["domain"] == "total"


# -- task lists ---------------------------------------------------------------------------


def _write(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


def _task_json(task_id: str) -> dict[str, Any]:
    return {"id": task_id, "evaluator": CHECKED}


def test_an_index_names_tasks_beside_it_in_examples(tmp_path: Path) -> None:
    _write(tmp_path / "examples/os/a.json", _task_json("a"))
    _write(tmp_path / "examples/gimp/b.json", _task_json("b"))
    index = _write(tmp_path / "test_all.json", {"os": ["a"], "gimp": ["b"]})

    listed = read_task_list([index])

    assert [(t.domain, t.id) for t in listed.tasks] == [("os", "a"), ("gimp", "b")]


def test_a_task_the_index_names_but_nobody_wrote_is_an_error_not_a_crash(tmp_path: Path) -> None:
    _write(tmp_path / "examples/os/a.json", _task_json("a"))
    index = _write(tmp_path / "test_all.json", {"os": ["a", "gone"]})

    listed = read_task_list([index])

    assert [t.id for t in listed.tasks] == ["a"]
    assert "gone.json" in str(listed.errors[0])


def test_an_index_naming_a_path_outside_examples_is_refused(tmp_path: Path) -> None:
    index = _write(tmp_path / "test_all.json", {"..": ["passwd"]})

    listed = read_task_list([index])

    assert listed.tasks == () and "not a domain or task id" in str(listed.errors[0])


def test_a_folder_of_task_files_leaves_its_indexes_out(tmp_path: Path) -> None:
    _write(tmp_path / "examples/os/a.json", _task_json("a"))
    _write(tmp_path / "test_all.json", {"os": ["a"]})

    listed = read_task_list([tmp_path])

    assert [t.id for t in listed.tasks] == ["a"] and listed.errors == ()


# -- the docs page ------------------------------------------------------------------------


def test_the_coverage_page_is_what_the_report_makes_of_the_task_set_now() -> None:
    """Regenerate with ``cleanroom osworld coverage TASK_SET --markdown >
    docs/osworld-coverage.md`` from the repository's root when this fails."""
    listed = read_task_list([REPO / TASK_SET])
    rows = [task_coverage(t) for t in listed.tasks]

    assert listed.errors == () and len(rows) == 369
    assert PAGE.read_text() == coverage_markdown(rows, TASK_SET)
