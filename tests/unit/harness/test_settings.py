"""A run setting is declared once, as a field of `RunSettings`: the loop's configuration
and every node's settings have each of its fields, and carry them across unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from cleanroom.cluster.node_run import NodeSettings
from cleanroom.harness.settings import (
    LoopConfig,
    LoopSettings,
    OutsideAgentSettings,
    RunSettings,
    SoakSettings,
)


@pytest.mark.parametrize("derived", [LoopConfig, NodeSettings, SoakSettings])
def test_every_run_setting_is_a_field_of_each_derived_model(derived: type[RunSettings]) -> None:
    assert set(RunSettings.model_fields) <= set(derived.model_fields)


def test_a_node_runs_the_loops_settings_and_gives_them_back() -> None:
    # given a loop configured away from every default it shares with a node
    config = LoopConfig(
        run_dir=Path("run"),
        envs=2,
        window_minutes=5.0,
        tasks=("writer",),
        trials_scale=0.5,
        tests=("clipboard",),
        on_demand=True,
        leaky_controls=False,
        warm_standby=False,
        soak=True,
        observation_s=30.0,
    )
    # when the driver tells a node, and the node makes its own loop
    node = NodeSettings.of_loop(config, run_key="key", node_runs="/nodes")
    back = node.loop_config(Path("share"))
    # then every shared setting arrived, and came back
    assert node.fields_of(LoopSettings) == config.fields_of(LoopSettings)
    assert back.fields_of(LoopSettings) == config.fields_of(LoopSettings)
    assert (back.run_dir, back.windows, back.job) == (Path("share"), 1, "node")


def test_names_may_be_one_comma_separated_string() -> None:
    settings = RunSettings(tasks="writer, form", tests="")  # type: ignore[arg-type]
    assert (settings.tasks, settings.tests) == (("writer", "form"), ())


def test_an_unknown_task_is_refused_with_the_known_ones() -> None:
    with pytest.raises(ValidationError, match=r"unknown task\(s\) bogus; use rename"):
        RunSettings(tasks=("bogus",))


def test_a_loop_needs_windows_or_hours_not_both() -> None:
    with pytest.raises(ValidationError, match="either a number of windows or a number of hours"):
        LoopConfig(run_dir=Path("run"), windows=2, hours=1.0)


def test_a_changed_copy_is_checked_as_a_new_record() -> None:
    with pytest.raises(ValidationError, match="is not an IP address"):
        OutsideAgentSettings().changed(host="example.org")
