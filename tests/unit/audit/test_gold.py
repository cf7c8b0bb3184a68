"""The gold state an OSWorld task file names: which expected file goes where, and the
tasks that name none (pure)."""

from __future__ import annotations

from typing import Any

from cleanroom.audit.gold import GoldFile, GoldPlan, NoGold, gold_plan, gold_setup
from cleanroom.verifiers.osworld.task import parse_task

URL = "https://huggingface.co/datasets/xlangai/ubuntu_osworld_file_cache/resolve/main/x/"


def task(evaluator: dict[str, Any], config: list[dict[str, Any]] | None = None) -> Any:
    return parse_task({"id": "t", "config": config or [], "evaluator": evaluator})


def vm_file(path: str) -> dict[str, Any]:
    return {"type": "vm_file", "path": path, "dest": path.rsplit("/", 1)[-1]}


def cloud_file(name: str) -> dict[str, Any]:
    return {"type": "cloud_file", "path": URL + name, "dest": name}


def test_a_cloud_expected_file_goes_where_the_result_getter_reads() -> None:
    plan = gold_plan(
        task(
            {
                "func": "compare_docx_files",
                "result": vm_file("~/a.docx"),
                "expected": cloud_file("g.docx"),
            }
        )
    )
    assert plan == GoldPlan(files=(GoldFile("cloud_file", URL + "g.docx", "~/a.docx"),))


def test_an_infeasible_task_s_gold_state_is_the_last_action_fail() -> None:
    assert gold_plan(task({"func": "infeasible"})) == GoldPlan(last_action="FAIL")


def test_a_rule_expected_value_is_no_gold_file() -> None:
    plan = gold_plan(
        task(
            {
                "func": "exact_match",
                "result": {"type": "vm_command_line", "command": "echo"},
                "expected": {"type": "rule", "rules": {"expected": "1"}},
            }
        )
    )
    assert isinstance(plan, NoGold)
    assert "vm_command_line" in plan.why


def test_with_and_every_call_needs_a_file_pair_with_or_one_is_placed() -> None:
    calls = {
        "func": ["compare_table", "exact_match"],
        "result": [vm_file("~/a.xlsx"), {"type": "vm_command_line", "command": "echo"}],
        "expected": [cloud_file("g.xlsx"), {"type": "rule", "rules": {}}],
    }
    assert isinstance(gold_plan(task({**calls, "conj": "and"})), NoGold)
    plan = gold_plan(task({**calls, "conj": "or"}))
    assert isinstance(plan, GoldPlan)
    assert [f.target for f in plan.files] == ["~/a.xlsx"]


def test_multi_getters_pair_their_files_by_position() -> None:
    result = {"type": "vm_file", "multi": True, "path": ["~/1", "~/2"], "dest": ["1", "2"]}
    expected = {
        "type": "cloud_file",
        "multi": True,
        "path": [URL + "a", URL + "b"],
        "dest": ["a", "b"],
    }
    plan = gold_plan(task({"func": "compare_pdfs", "result": result, "expected": expected}))
    assert isinstance(plan, GoldPlan)
    assert [(f.source, f.target) for f in plan.files] == [(URL + "a", "~/1"), (URL + "b", "~/2")]


def test_getters_naming_different_numbers_of_files_have_no_gold_state() -> None:
    result = {"type": "vm_file", "multi": True, "path": ["~/1", "~/2"], "dest": ["1", "2"]}
    plan = gold_plan(task({"func": "compare_pdfs", "result": result, "expected": cloud_file("a")}))
    assert isinstance(plan, NoGold)


def test_the_setup_s_download_of_the_result_file_fetches_the_gold_one_instead() -> None:
    config = [
        {
            "type": "download",
            "parameters": {
                "files": [
                    {"url": URL + "start.docx", "path": "~/Desktop/a.docx"},
                    {"url": URL + "other.png", "path": "~/Desktop/b.png"},
                ]
            },
        },
        {"type": "open", "parameters": {"path": "~/Desktop/a.docx"}},
    ]
    raw = {
        "id": "t",
        "config": config,
        "evaluator": {
            "func": "compare_docx_files",
            "result": vm_file("~/Desktop/a.docx"),
            "expected": cloud_file("gold.docx"),
        },
    }
    plan = gold_plan(parse_task(raw))
    assert isinstance(plan, GoldPlan)
    gold, left = gold_setup(raw, plan)
    files = gold["config"][0]["parameters"]["files"]
    assert [f["url"] for f in files] == [URL + "gold.docx", URL + "other.png"]
    assert left == ()
    assert raw["config"][0]["parameters"]["files"][0]["url"] == URL + "start.docx"  # a copy


def test_a_result_file_the_setup_does_not_download_is_placed_after_it() -> None:
    raw = {
        "id": "t",
        "evaluator": {
            "func": "compare_docx_files",
            "result": vm_file("~/new.docx"),
            "expected": cloud_file("gold.docx"),
        },
    }
    plan = gold_plan(parse_task(raw))
    assert isinstance(plan, GoldPlan)
    assert gold_setup(raw, plan)[1] == plan.files


def test_an_expected_file_a_postconfig_step_downloads_is_taken_from_that_steps_url() -> None:
    download = {
        "type": "download",
        "parameters": {"files": [{"url": URL + "g.xlsx", "path": "/home/user/g.xlsx"}]},
    }
    plan = gold_plan(
        task(
            {
                "postconfig": [download],
                "func": "compare_table",
                "result": vm_file("/home/user/a.xlsx"),
                "expected": vm_file("/home/user/g.xlsx"),
            }
        )
    )
    assert plan == GoldPlan(files=(GoldFile("cloud_file", URL + "g.xlsx", "/home/user/a.xlsx"),))
