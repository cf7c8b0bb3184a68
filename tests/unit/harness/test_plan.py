"""Planning a window: which isolation tests run, how many trials, which task where."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from cleanroom.harness.plan import (
    PlannedCheck,
    UnknownCheck,
    assign_tasks,
    follow_up_trials,
    plan_tests,
)
from cleanroom.isolation.battery import Schedule


@dataclass(frozen=True)
class _Test:
    name: str
    number: int
    schedule: Schedule


BATTERY = [
    _Test("keyboard_storm", 3, Schedule(window=10, soak=10)),
    _Test("clipboard", 2, Schedule(window=50, soak=10)),
    _Test("files_and_prefs", 8, Schedule(window=3, soak=3, on_demand=True)),
]


def test_every_scheduled_test_runs_in_number_order_with_its_window_trials() -> None:
    assert plan_tests(BATTERY) == [
        PlannedCheck("clipboard", 50),
        PlannedCheck("keyboard_storm", 10),
    ]


def test_the_soak_uses_the_soak_trial_counts() -> None:
    assert plan_tests(BATTERY, soak=True)[0] == PlannedCheck("clipboard", 10)


def test_on_demand_tests_run_only_when_asked_for() -> None:
    names = [p.name for p in plan_tests(BATTERY, on_demand=True)]
    assert names == ["clipboard", "keyboard_storm", "files_and_prefs"]
    assert [p.name for p in plan_tests(BATTERY, chosen=["files_and_prefs"])] == ["files_and_prefs"]


def test_a_scaled_down_test_still_runs_at_least_once() -> None:
    plan = plan_tests(BATTERY, scale=0.05, on_demand=True)
    assert [p.trials for p in plan] == [2, 1, 1]


def test_an_unknown_test_name_is_refused_with_the_known_names() -> None:
    with pytest.raises(UnknownCheck, match=r"no isolation test named typo.*clipboard"):
        plan_tests(BATTERY, chosen=["typo"])


def test_a_non_positive_scale_is_refused() -> None:
    with pytest.raises(ValueError):
        plan_tests(BATTERY, scale=0)


def test_tasks_rotate_so_every_environment_runs_every_task() -> None:
    envs, tasks = ["env01", "env02"], ["rename", "writer", "form"]
    seen = {pair for batch in range(3) for pair in assign_tasks(envs, tasks, batch)}
    assert seen == {(e, t) for e in envs for t in tasks}
    assert assign_tasks(envs, tasks, 0) == [("env01", "rename"), ("env02", "writer")]


def test_a_batch_with_a_writer_rollout_calls_for_one_more_clipboard_trial() -> None:
    plan = plan_tests(BATTERY)
    assert follow_up_trials(plan, ["rename", "writer", "writer"]) == 1
    assert follow_up_trials(plan, ["clipboard"]) == 1
    assert follow_up_trials(plan, ["rename", "form"]) == 0
    assert follow_up_trials(plan, []) == 0


def test_no_follow_up_when_the_clipboard_test_is_not_in_the_plan() -> None:
    plan = plan_tests(BATTERY, chosen=["keyboard_storm"])
    assert follow_up_trials(plan, ["writer"]) == 0
