"""``cleanroom run`` and ``cleanroom soak`` take their options from the settings models:
every run setting is an option of both, and what is given reaches the loop."""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from pydantic import BaseModel, Field
from pydantic.fields import FieldInfo
from typer.testing import CliRunner

from cleanroom.cli import app
from cleanroom.cli import run as run_module
from cleanroom.cli.model_options import with_settings
from cleanroom.environments.interface import ScreenSize
from cleanroom.harness.loop import LoopResult, pool_config
from cleanroom.harness.settings import CliOption, LoopConfig, RunSettings, Settings
from cleanroom.rollouts.osworld_outside import OUTSIDE_TASK

from ...docs_examples import doc_block

REPO = Path(__file__).resolve().parents[3]


def _leaves(model: type[BaseModel]) -> Iterator[tuple[str, FieldInfo]]:
    for name, field in model.model_fields.items():
        if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel):
            yield from _leaves(field.annotation)
        else:
            yield name, field


def _option_name(name: str, field: FieldInfo) -> str:
    spelled = next((m for m in field.metadata if isinstance(m, CliOption)), CliOption())
    return spelled.name or "--" + name.replace("_", "-")


def _options(command: str) -> set[str]:
    group = typer.main.get_command(app)
    return {opt for param in group.commands[command].params for opt in param.opts}  # type: ignore[attr-defined]


@pytest.mark.parametrize("command", ["run", "soak"])
def test_every_run_setting_is_an_option_of_the_command(command: str) -> None:
    wanted = {_option_name(name, field) for name, field in _leaves(RunSettings)}
    assert wanted <= _options(command)


class Shiny(Settings):
    """A model no command has heard of."""

    polish: bool = Field(default=True, description="Polish everything.")
    coats: int = Field(default=2, ge=1, le=5, description="Coats of paint.")


def test_a_new_setting_is_one_field_and_becomes_an_option() -> None:
    # given a command that takes the model
    seen: list[Shiny] = []

    @with_settings
    def paint(*, settings: Shiny) -> None:
        seen.append(settings)

    command = typer.Typer()
    command.command()(paint)
    # when it is run with the fields' options
    result = CliRunner().invoke(command, ["--no-polish", "--coats", "3"])
    helped = CliRunner().invoke(command, ["--help"], env={"COLUMNS": "200"})
    refused = CliRunner().invoke(command, ["--coats", "9"])
    # then the command gets the model, and each option has its field's help and range
    assert result.exit_code == 0, result.output
    assert seen == [Shiny(polish=False, coats=3)]
    assert "Coats of paint." in helped.output and "1<=x<=5" in helped.output
    assert refused.exit_code == 2


def _loop_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, args: list[str]) -> LoopConfig:
    configs: list[LoopConfig] = []

    def run_loop(config: LoopConfig, *_: Any, **__: Any) -> LoopResult:
        configs.append(config)
        return LoopResult(config.run_dir, status="finished")

    monkeypatch.setattr(run_module, "run_loop", run_loop)
    monkeypatch.setattr(run_module, "print_report", lambda *_: None)
    result = CliRunner().invoke(app, [*args, "--run", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    (config,) = configs
    return config


def test_what_run_is_given_reaches_the_loop(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    config = _loop_config(
        monkeypatch,
        tmp_path,
        ["run", "--envs", "2", "--windows", "3", "--tasks", "writer,form", "--tests",
         "clipboard", "--on-demand", "--no-warm-standby", "--agent-port", "8765",
         "--agent-wait", "60", "--no-agent-a11y-tree"],
    )  # fmt: skip
    assert (config.envs, config.windows, config.hours) == (2, 3, None)
    assert (config.tasks, config.tests) == (("writer", "form"), ("clipboard",))
    assert config.on_demand and not config.warm_standby and config.leaky_controls
    agents = config.outside_agents
    assert (agents.port, agents.wait_s, agents.a11y_tree) == (8765, 60.0, False)
    assert (config.soak, config.job, config.window_minutes) == (False, "run", 0.0)


def test_soak_runs_for_hours_with_half_hour_windows_and_the_soak_counts(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    config = _loop_config(monkeypatch, tmp_path, ["soak", "--hours", "2", "--envs", "4"])
    assert (config.hours, config.windows, config.window_minutes) == (2.0, None, 30.0)
    assert (config.soak, config.job, config.envs) == (True, "soak", 4)


def test_run_starts_its_pool_at_the_screen_size_it_is_given(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    config = _loop_config(monkeypatch, tmp_path, ["run", "--screen", "1920x1080"])
    assert pool_config(config).screen == ScreenSize(1920, 1080)


def test_run_keeps_the_pools_own_screen_size_when_none_is_given(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    config = _loop_config(monkeypatch, tmp_path, ["run"])
    assert pool_config(config).screen == ScreenSize()


@pytest.mark.parametrize("screen", ["1920", "1920x", "wide", "10x10", "1920x1080x24"])
def test_run_refuses_a_screen_size_that_is_not_width_x_height(tmp_path: Path, screen: str) -> None:
    result = CliRunner().invoke(app, ["run", "--screen", screen, "--run", str(tmp_path / "r")])
    assert result.exit_code == 2, result.output
    assert not (tmp_path / "r").exists()


def test_the_documented_run_for_osworlds_runner_starts_its_pool_at_osworlds_screen(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # The command docs/verifiers/osworld-agents.md shows, as given (its run folder moved).
    block = doc_block("docs/verifiers/osworld-agents.md", "OSWorld's runner inside a window")
    command = shlex.split(block.text)
    assert command[0] == "cleanroom" and command[-2] == "--run"
    config = _loop_config(monkeypatch, tmp_path, command[1:-2])
    assert OUTSIDE_TASK in config.tasks and config.envs == 2
    assert pool_config(config).screen == ScreenSize(1920, 1080)
