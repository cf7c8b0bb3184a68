"""Task files: the 37 real OSWorld tasks parse, the report names the gaps, bad files are named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cleanroom.verifiers.osworld.support import missing_for_check, task_support
from cleanroom.verifiers.osworld.task import TaskFileError, find_task_files, load_task, parse_task

TASKS = Path(__file__).resolve().parents[2] / "data" / "osworld" / "tasks"
RENAME = TASKS / "os" / "e0df059f-28a6-4169-924f-b9623e7184cc.json"


def write(tmp_path: Path, data: object, name: str = "t.json") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def minimal(**evaluator: object) -> dict[str, object]:
    return {"id": "t1", "config": [], "evaluator": evaluator}


def test_all_37_copied_tasks_parse() -> None:
    files = find_task_files([TASKS])
    assert len(files) == 37
    for path in files:
        assert load_task(path).id == path.stem


def test_the_rename_task_has_one_exact_match_on_a_command() -> None:
    task = load_task(RENAME)
    (call,) = task.evaluator.calls
    assert (call.func, call.result.type, call.expected and call.expected.type) == (
        "exact_match",
        "vm_command_line",
        "rule",
    )
    assert [s.type for s in task.config] == ["execute", "execute"]


def test_or_tasks_keep_their_conjunction() -> None:
    task = load_task(TASKS / "os" / "bedcedc4-4d72-425e-ad62-21960b11fe0d.json")
    assert task.evaluator.conj == "or" and len(task.evaluator.calls) == 2


def test_support_report_names_unsupported_getters_and_metrics() -> None:
    vscode = task_support(
        load_task(TASKS / "multi_apps" / "510f64c8-9bcc-4be1-8d30-638705850618.json")
    )
    archive = task_support(
        load_task(TASKS / "multi_apps" / "f7dfbef3-7697-431c-883a-db8583a4e4f9.json")
    )
    assert vscode.missing_getters == ("vscode_config",) and not vscode.checkable
    # compare_archive is OSWorld's own, called from desktop-env in the checker environment.
    assert archive.missing_metrics == () and archive.checkable


def test_support_report_names_a_metric_the_checker_environment_cannot_run() -> None:
    task = parse_task(
        {
            "id": "ocr",
            "config": [],
            "evaluator": {
                "func": "compare_image_text",
                "result": {"type": "vm_file", "path": "/home/user/a.png", "dest": "a.png"},
                "expected": {"type": "rule", "rules": {"type": "text", "text": "x"}},
            },
        }
    )
    assert task_support(task).missing_metrics == ("compare_image_text",)


def test_support_report_names_desktop_steps() -> None:
    report = task_support(
        load_task(TASKS / "vs_code" / "0512bb38-d531-4acf-9e7e-0add90816068.json")
    )
    assert report.desktop_steps == ("activate_window",)
    assert report.missing_steps == ()
    assert report.checkable


def test_exactly_one_of_the_37_tasks_cannot_be_scored() -> None:
    blocked = [p.stem for p in find_task_files([TASKS]) if missing_for_check(load_task(p))]
    assert sorted(blocked) == ["510f64c8-9bcc-4be1-8d30-638705850618"]


def test_bad_json_names_the_file_and_the_position(tmp_path: Path) -> None:
    path = write(tmp_path, '{"id": "x",')
    with pytest.raises(TaskFileError, match=r"t\.json: not valid JSON \(line 1"):
        load_task(path)


def test_missing_evaluator_is_named(tmp_path: Path) -> None:
    with pytest.raises(TaskFileError, match="missing 'evaluator'"):
        load_task(write(tmp_path, {"id": "x"}))


def test_missing_func_is_named(tmp_path: Path) -> None:
    with pytest.raises(TaskFileError, match="no 'func'"):
        load_task(write(tmp_path, minimal(result={"type": "rule", "rules": {}})))


def test_list_func_with_short_result_list_is_named(tmp_path: Path) -> None:
    data = minimal(func=["exact_match", "exact_match"], result=[{"type": "rule"}])
    with pytest.raises(TaskFileError, match="2 funcs but 'result' is not a list of 2"):
        load_task(write(tmp_path, data))


def test_list_func_with_mismatched_options_is_named(tmp_path: Path) -> None:
    data = minimal(
        func=["exact_match"], result=[{"type": "rule"}], expected=[None], options=[{}, {}]
    )
    with pytest.raises(TaskFileError, match="'options' is not a list of 1"):
        load_task(write(tmp_path, data))


def test_list_func_with_mismatched_expected_is_named(tmp_path: Path) -> None:
    data = minimal(func=["a", "b"], result=[{"type": "rule"}] * 2, expected=[{"type": "rule"}])
    with pytest.raises(TaskFileError, match="'expected' is not a list of 2"):
        load_task(write(tmp_path, data))


def test_single_func_without_result_is_named(tmp_path: Path) -> None:
    with pytest.raises(TaskFileError, match="has no 'result' getter"):
        load_task(write(tmp_path, minimal(func="exact_match")))


def test_unknown_conj_is_named(tmp_path: Path) -> None:
    data = minimal(func="exact_match", result={"type": "rule"}, conj="xor")
    with pytest.raises(TaskFileError, match="'conj' must be 'and' or 'or'"):
        load_task(write(tmp_path, data))


def test_step_without_type_is_named(tmp_path: Path) -> None:
    data = {"id": "x", "config": [{"parameters": {}}], "evaluator": {"func": "infeasible"}}
    with pytest.raises(TaskFileError, match="config step 0 must be an object"):
        load_task(write(tmp_path, data))


def test_unreadable_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(TaskFileError, match="cannot read"):
        load_task(tmp_path / "absent.json")


def test_infeasible_task_needs_no_getters(tmp_path: Path) -> None:
    task = load_task(write(tmp_path, minimal(func="infeasible")))
    assert task.evaluator.infeasible and task.evaluator.calls == ()


def test_related_apps_are_kept_and_a_non_list_is_named() -> None:
    task = parse_task({"id": "t", "related_apps": ["gimp"], "evaluator": {"func": "infeasible"}})
    assert task.related_apps == ("gimp",)
    with pytest.raises(TaskFileError, match="related_apps"):
        parse_task({"id": "t", "related_apps": "gimp", "evaluator": {"func": "infeasible"}})


def test_a_task_in_another_home_names_that_home_in_its_steps_getters_and_options() -> None:
    from cleanroom.verifiers.osworld.task import parse_task, task_in_home

    task = parse_task(
        {
            "id": "t",
            "instruction": "Edit /home/user/a.txt.",
            "config": [{"type": "open", "parameters": {"path": "/home/user/a.txt"}}],
            "evaluator": {
                "func": "check",
                "result": {"type": "vm_file", "path": "/home/user/a.txt", "dest": "a.txt"},
                "expected": {"type": "rule", "rules": {"uri": "file:///home/user/b.png"}},
                "options": {"keep": "/home/username/c"},
            },
        }
    )
    moved = task_in_home(task, "/pool/homes/env01")
    assert moved.config[0].parameters["path"] == "/pool/homes/env01/a.txt"
    call = moved.evaluator.calls[0]
    assert call.result.config["path"] == "/pool/homes/env01/a.txt"
    assert call.expected is not None
    assert call.expected.config["rules"]["uri"] == "file:///pool/homes/env01/b.png"
    assert call.options == {"keep": "/home/username/c"}
    assert moved.instruction == "Edit /home/user/a.txt."
    assert task_in_home(task, "/home/user") is task
