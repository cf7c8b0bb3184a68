"""A run's settings, each declared once, as a field of a model.

`RunSettings` holds what ``cleanroom run`` and ``cleanroom soak`` set: every field is an
option of both commands (`cli.model_options`), a field of the loop's configuration
(`LoopConfig`) and of what the cluster's driver tells every node
(`cluster.node_run.NodeSettings`), since both derive from it. A new run setting is one
field of `RunSettings`: its ``description`` is the option's help, its bounds (``ge``,
``le``) the option's range, its name the option's name (``warm_standby``:
``--warm-standby/--no-warm-standby``; `CliOption` where it is spelled otherwise).
`LoopSettings` adds what only code sets (the soak's trial counts, the positive control's
size), still shared by a loop on one machine and every node's.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Self

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

from cleanroom.environments.interface import ScreenSize
from cleanroom.environments.osworld_env.actions import ACTION_SPACES
from cleanroom.environments.providers import DEFAULT_ROOT
from cleanroom.rollouts.osworld_outside import (
    CONNECTION_FILE,
    DEFAULT_EPISODE_S,
    DEFAULT_WAIT_S,
    OUTSIDE_TASK,
)
from cleanroom.rollouts.registry import TASKS


@dataclass(frozen=True)
class CliOption:
    """How a setting is spelled on the command line where its field's name does not say
    it: ``name`` (``--agent-wait`` for the outside agents' ``wait_s``), ``negatable=False``
    for a flag with no ``--no-`` form, ``metavar`` for the value's placeholder."""

    name: str | None = None
    negatable: bool = True
    metavar: str | None = None


def _split_commas(value: Any) -> Any:
    if isinstance(value, str):
        return tuple(t.strip() for t in value.split(",") if t.strip())
    return value


# Names, given as a tuple or as one comma-separated string (as the command line gives them).
Names = Annotated[tuple[str, ...], BeforeValidator(_split_commas)]


class Settings(BaseModel):
    """A frozen record of settings that refuses names it does not have."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    def fields_of(self, model: type[BaseModel]) -> dict[str, Any]:
        """The values of ``model``'s fields, a model this record derives from."""
        return {name: getattr(self, name) for name in model.model_fields}

    def changed(self, **changes: Any) -> Self:
        """A copy with ``changes``, checked as a new record would be."""
        return self.model_validate({**dict(self), **changes})


class ControlSettings(Settings):
    """How much of the positive control to run: typing rounds, characters, clipboard trials."""

    typing_rounds: int = Field(default=3, ge=0, description="Rounds of typing in one Writer.")
    chars: int = Field(default=40, ge=1, description="Characters typed in each round.")
    clipboard_trials: int = Field(default=20, ge=0, description="Clipboard trials.")


class OutsideAgentSettings(Settings):
    """The OSWorld interface a run serves when its tasks name ``osworld-agent``: agents
    that run elsewhere drive its acting environments, one episode per rollout
    (`rollouts.osworld_outside`)."""

    port: Annotated[int, CliOption("--agent-port")] = Field(
        default=0,
        ge=0,
        le=65535,
        description=f"With --tasks {OUTSIDE_TASK}: serve OSWorld's DesktopEnv interface on"
        f" PORT (0: any free port) of --agent-host. Each environment's key, and the URL, are"
        f" in {CONNECTION_FILE} in the run folder.",
    )
    # Loopback unless the agents run on other machines; every route needs a key either way.
    host: Annotated[str, CliOption("--agent-host")] = Field(
        default="127.0.0.1",
        description="The address the OSWorld interface listens on: loopback by default; an"
        " address other machines reach when the agents run there (each route still needs"
        " its environment's key).",
    )
    action_space: Annotated[str, CliOption("--agent-action-space")] = Field(
        default="pyautogui", description="The outside agents' OSWorld action space."
    )
    wait_s: Annotated[float, CliOption("--agent-wait")] = Field(
        default=DEFAULT_WAIT_S,
        ge=1,
        description="Seconds each environment waits for its outside agent to reset in each"
        " batch; an environment no agent came to gets no rollout in that batch.",
    )
    episode_s: Annotated[float, CliOption("--agent-episode")] = Field(
        default=DEFAULT_EPISODE_S,
        ge=1,
        description="Seconds an outside agent's episode may run; then the desktop is scored"
        " as it is.",
    )
    a11y_tree: Annotated[bool, CliOption("--agent-a11y-tree")] = Field(
        default=True,
        description="Whether the outside agents' observations carry the environment's"
        " accessibility tree (OSWorld's XML), as OSWorld's do by default; reading it takes"
        " a few seconds per observation.",
    )

    @field_validator("host")
    @classmethod
    def _an_ip_address(cls, host: str) -> str:
        try:
            ipaddress.ip_address(host)
        except ValueError:
            raise ValueError(f"the agents' host {host!r} is not an IP address") from None
        return host

    @field_validator("action_space")
    @classmethod
    def _a_known_action_space(cls, action_space: str) -> str:
        if action_space not in ACTION_SPACES:
            raise ValueError(f"action space {action_space!r}: choose {', '.join(ACTION_SPACES)}")
        return action_space


class RunSettings(Settings):
    """What ``cleanroom run`` and ``cleanroom soak`` set: each field is an option of both,
    and a field of `LoopConfig` and of every node's settings. A new run setting is one
    field here, and nothing else."""

    envs: int = Field(default=3, ge=1, le=32, description="Acting environments (+ env00).")
    window_minutes: float = Field(
        default=0.0,
        ge=0,
        description="Keep running smoke rollouts until a window has lasted this long"
        " (0: one batch of rollouts and the tests).",
    )
    tasks: Names = Field(
        default=TASKS,
        description=f"Smoke tasks, comma-separated; '{OUTSIDE_TASK}': rollouts driven by"
        " agents from outside through OSWorld's interface (see --agent-port).",
    )
    trials_scale: float = Field(
        default=1.0, ge=0.001, description="Multiply every test's trial count (at least 1)."
    )
    tests: Names | None = Field(
        default=None,
        description="Only these isolation tests (comma-separated; on-demand ones too).",
    )
    on_demand: Annotated[bool, CliOption(negatable=False)] = Field(
        default=False, description="Also run the on-demand tests."
    )
    # Recorded, so that a report can say why its checks were not proven.
    leaky_controls: bool = Field(
        default=True,
        description="After the windows, prove every planned check in this run: each test"
        " under a leaky setup or fault it must detect, the canary's, the audit's and the"
        " sweep's planted leaks. Without them no check is proven, so the isolation number is"
        " refused.",
    )
    # The run's own controls on the isolated pool use the same resets (`Pool`).
    warm_standby: bool = Field(
        default=True,
        description="Keep a spare slot of every acting environment up, so that a reset swaps"
        " it in instead of starting the programs again (twice the environments' memory).",
    )
    screen: Annotated[str, CliOption(metavar="WxH")] = Field(
        default=f"{ScreenSize().width}x{ScreenSize().height}",
        description="The acting environments' screen size, WIDTHxHEIGHT. OSWorld's tasks and"
        " agents expect its default, 1920x1080 (with --tasks osworld-agent).",
    )
    outside_agents: OutsideAgentSettings = Field(
        default_factory=OutsideAgentSettings,
        description="The OSWorld interface served to agents that run outside.",
    )

    @field_validator("screen")
    @classmethod
    def _a_screen_size(cls, screen: str) -> str:
        parsed = ScreenSize.parse(screen)
        return f"{parsed.width}x{parsed.height}"

    def screen_size(self) -> ScreenSize:
        """The acting environments' screen, as the pool takes it."""
        return ScreenSize.parse(self.screen)

    @field_validator("tasks")
    @classmethod
    def _known_tasks(cls, tasks: tuple[str, ...]) -> tuple[str, ...]:
        known = (*TASKS, OUTSIDE_TASK)
        unknown = sorted(set(tasks) - set(known))
        if unknown:
            raise ValueError(f"unknown task(s) {', '.join(unknown)}; use {', '.join(known)}")
        return tasks


class SoakSettings(RunSettings):
    """What ``cleanroom soak`` sets: the run's settings, with half-hour windows."""

    window_minutes: float = Field(default=30.0, ge=0, description="Window length.")


class LoopSettings(RunSettings):
    """What a loop runs, on one machine or as a node's share: the run's settings, and
    what only code sets."""

    soak: bool = Field(default=False, description="Plan the soak's trial counts.")
    control: ControlSettings = Field(
        default_factory=ControlSettings, description="The positive control's size."
    )
    observation_s: float | None = Field(
        default=None,
        gt=0,
        description="observation_privacy's watch, when shorter than its window's 120 s"
        " (the demo's).",
    )


class LoopConfig(LoopSettings):
    """Everything a loop on one machine runs by: its settings, its run folder, and how
    many windows."""

    run_dir: Path
    windows: int | None = Field(
        default=1, ge=1, description="None: windows until `hours` have passed."
    )
    hours: float | None = Field(default=None, gt=0)
    pool_root: Path = DEFAULT_ROOT
    job: str = "run"

    @model_validator(mode="after")
    def _windows_or_hours(self) -> Self:
        if (self.windows is None) == (self.hours is None):
            raise ValueError("give either a number of windows or a number of hours")
        return self
