"""Harbor's multi-step layout: ``[[steps]]`` in task.toml, a folder per step."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cleanroom.core.outcomes import Reason, Status
from cleanroom.verifiers.container.runtime.docker import DockerRuntime
from cleanroom.verifiers.container.task import (
    TaskConfigError,
    TaskError,
    TaskLayoutError,
    load_task,
    parse_task_toml,
)
from cleanroom.verifiers.container.verify import ActedOn, VerifyOptions, verify_acted_on

HERE = Path("/tasks/demo")
TWO_STEPS = """
multi_step_reward_strategy = "final"
[verifier]
timeout_sec = 99
user = "tester"
[[steps]]
name = "first"
min_reward = 1.0
[[steps]]
name = "second"
[steps.agent]
timeout_sec = 7
user = "agent"
[steps.verifier]
env = { LEVEL = "2" }
network_mode = "public"
"""


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def multi_step_folder(
    root: Path, toml: str = TWO_STEPS, extra: dict[str, str] | None = None
) -> Path:
    files = {
        "task.toml": toml,
        "environment/Dockerfile": "FROM scratch\n",
        "steps/first/instruction.md": "do one\n",
        "steps/first/tests/test.sh": "echo 1 > /logs/verifier/reward.txt\n",
        "steps/first/solution/solve.sh": "true\n",
        "steps/second/instruction.md": "do two\n",
        "steps/second/tests/test.sh": "echo 1 > /logs/verifier/reward.txt\n",
    }
    files.update(extra or {})
    return write(root, files)


def test_a_multi_step_folder_loads_its_steps_in_order(tmp_path: Path) -> None:
    task = load_task(multi_step_folder(tmp_path))

    assert [s.name for s in task.steps] == ["first", "second"]
    assert task.steps[1].instruction == "do two\n"
    assert task.instruction == ""  # as Harbor: each step has its own
    assert task.config.reward_strategy == "final"
    assert task.config.steps is not None and task.config.steps[0].min_reward == 1.0


def test_step_settings_are_read(tmp_path: Path) -> None:
    second = load_task(multi_step_folder(tmp_path)).steps[1].config

    assert (second.agent.timeout_sec, second.agent.user) == (7, "agent")
    # Harbor: a step's verifier limit is its own (600 s by default), not the task's.
    assert second.verifier.timeout_sec == 600
    assert second.verifier.user is None  # the task's, when the rollout runs it
    assert (second.verifier.env, second.verifier.network_mode) == ({"LEVEL": "2"}, "public")


def test_the_reward_strategy_defaults_to_mean() -> None:
    config, _ = parse_task_toml('[[steps]]\nname = "a"\n', HERE)
    assert config.reward_strategy == "mean"


def test_a_step_without_tests_uses_the_tasks_and_its_own_go_on_top(tmp_path: Path) -> None:
    root = multi_step_folder(
        tmp_path, extra={"tests/test.sh": "shared\n", "tests/helper.sh": "x\n"}
    )
    (root / "steps/second/tests/test.sh").unlink()
    (root / "steps/second/tests").rmdir()
    task = load_task(root)

    first, second = task.steps
    assert first.tests_dirs == (root / "tests", root / "steps/first/tests")
    assert second.tests_dirs == (root / "tests",)


def test_a_step_without_a_solution_uses_the_tasks(tmp_path: Path) -> None:
    root = multi_step_folder(tmp_path, extra={"solution/solve.sh": "true\n"})
    first, second = load_task(root).steps

    assert first.solution_dir == root / "steps/first/solution"
    assert second.solution_dir == root / "solution"


def test_a_multi_step_task_needs_no_top_level_instruction(tmp_path: Path) -> None:
    assert not (multi_step_folder(tmp_path) / "instruction.md").exists()
    load_task(tmp_path)


def test_a_single_step_task_still_needs_its_instruction(tmp_path: Path) -> None:
    write(tmp_path, {"task.toml": "", "tests/test.sh": "true\n"})
    with pytest.raises(TaskLayoutError, match=r"instruction\.md is missing"):
        load_task(tmp_path)


def test_a_missing_step_folder_is_named(tmp_path: Path) -> None:
    root = multi_step_folder(tmp_path)
    for path in sorted((root / "steps/second").rglob("*"), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    (root / "steps/second").rmdir()

    with pytest.raises(TaskLayoutError, match=r"steps/second/ \(the folder of step 'second'\)"):
        load_task(root)


def test_a_missing_step_instruction_is_named(tmp_path: Path) -> None:
    root = multi_step_folder(tmp_path)
    (root / "steps/first/instruction.md").unlink()

    with pytest.raises(TaskLayoutError, match=r"steps/first/instruction\.md is missing"):
        load_task(root)


def test_a_step_with_no_test_script_anywhere_is_named(tmp_path: Path) -> None:
    root = multi_step_folder(tmp_path)
    (root / "steps/second/tests/test.sh").unlink()

    with pytest.raises(TaskLayoutError, match=r"steps/second/tests/test.sh \(or tests/test.sh"):
        load_task(root)


def test_a_step_workdir_is_refused_by_name(tmp_path: Path) -> None:
    root = multi_step_folder(tmp_path, extra={"steps/first/workdir/setup.sh": "true\n"})

    with pytest.raises(TaskError, match=r"steps/first/workdir .* not supported by cleanroom"):
        load_task(root)


def test_a_step_folder_linked_out_of_the_task_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    write(outside, {"instruction.md": "x\n", "tests/test.sh": "true\n"})
    root = multi_step_folder(tmp_path / "task")
    for path in sorted((root / "steps/second").rglob("*"), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    (root / "steps/second").rmdir()
    (root / "steps/second").symlink_to(outside)

    with pytest.raises(TaskError, match="inside the task"):
        load_task(root)


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ('[[steps]]\nname = "a"\n[[steps]]\nname = "A"\n', "unique"),
        ('[[steps]]\nname = "a/b"\n', "portable folder name"),
        ('[[steps]]\nname = ".."\n', "portable folder name"),
        ('[[steps]]\nname = "CON"\n', "portable folder name"),
        ('[[steps]]\nname = "a"\nmin_reward = "high"\n', "min_reward"),
        ('multi_step_reward_strategy = "max"\n[[steps]]\nname = "a"\n', "multi_step_reward"),
        ("[[steps]]\n", "name"),
    ],
)
def test_a_malformed_steps_table_is_an_error_naming_it(toml: str, message: str) -> None:
    with pytest.raises(TaskConfigError, match=message):
        parse_task_toml(toml, HERE)


def test_an_unknown_key_in_a_step_is_a_warning_with_its_line() -> None:
    _, warnings = parse_task_toml('[[steps]]\nname = "a"\n[steps.verifier]\nstate = []\n', HERE)

    assert [str(w) for w in warnings] == ["line 4: unknown key steps.verifier.state (kept)"]


class NoDaemon:
    """A runtime that declares Docker's capabilities and fails any call: naming a wrong
    step is refused before Docker."""

    capabilities = DockerRuntime.capabilities

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"{name} was called")


@pytest.mark.parametrize(("step", "asked"), [("third", "step 'third'"), (None, "no step")])
def test_a_harness_naming_a_step_the_task_lacks_is_an_environment_error(
    tmp_path: Path, step: str | None, asked: str
) -> None:
    task = load_task(multi_step_folder(tmp_path))
    runtime: DockerRuntime = NoDaemon()  # type: ignore[assignment]

    outcome = verify_acted_on(task, ActedOn("ctr", "img", step=step), runtime, VerifyOptions())

    assert (outcome.status, outcome.reason) == (Status.INVALID, Reason.ENVIRONMENT_ERROR)
    assert f"asked to verify {asked}; the task's steps are 'first', 'second'" in outcome.detail
