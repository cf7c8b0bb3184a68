"""A step's sections and the whole ``task.toml`` (`TaskConfig`)."""

from __future__ import annotations

import re
import unicodedata
from typing import Any, Literal

from pydantic import (
    Field,
    field_validator,
    model_validator,
)

from cleanroom.core.paths import under
from cleanroom.verifiers.container.task.environment_config import (
    ARTIFACTS_DIR,
    ArtifactEntry,
    EnvironmentConfig,
)
from cleanroom.verifiers.container.task.section_rules import (
    NetworkMode,
    Section,
    no_collect_hooks,
    no_verifier_environment,
    not_supported,
    refuse_allowlist,
    shared_verifier_only,
    user_name,
)
from cleanroom.verifiers.container.task.sections import (
    AgentConfig,
    PackageInfo,
    SolutionConfig,
    VerifierConfig,
)

_BAD_STEP_CHARS = re.compile(r'[<>:"/\\|?*\x00-\x1f\x7f]')
_DEVICE_NAME = re.compile(r"(CON|PRN|AUX|NUL|CONIN\$|CONOUT\$|(?:COM|LPT)[1-9¹²³])", re.IGNORECASE)


class StepAgentConfig(Section):
    """``[steps.agent]``: a step's agent phase; what it leaves unset is the task's."""

    timeout_sec: float | None = Field(default=None, gt=0)
    user: str | None = None
    network_mode: NetworkMode | None = None
    allowed_hosts: list[str] | None = None

    _user = field_validator("user", mode="before")(user_name)

    @model_validator(mode="after")
    def _no_allowlist(self) -> StepAgentConfig:
        refuse_allowlist(self.network_mode, self.allowed_hosts)
        return self


class StepVerifierConfig(Section):
    """``[steps.verifier]``: Harbor's verifier fields for one step.

    As in Harbor, ``timeout_sec`` is the step's own (600 s when unset, whatever the task's
    ``[verifier]`` says), ``env`` is added to the task's, and ``user`` and
    ``network_mode`` fall back to the task's. cleanroom's own ``[verifier]`` keys
    (reward path, state, setup commands, ...) are the task's for every step.
    """

    timeout_sec: float = Field(default=600.0, gt=0)
    env: dict[str, str] = Field(default_factory=dict)
    user: str | None = None
    network_mode: NetworkMode | None = None
    allowed_hosts: list[str] | None = None
    environment_mode: Literal["shared", "separate"] | None = None
    environment: Any = None
    collect: Any = None

    _user = field_validator("user", mode="before")(user_name)
    _shared_only = field_validator("environment_mode")(shared_verifier_only)
    _no_environment = field_validator("environment")(no_verifier_environment)
    _no_collect = field_validator("collect")(no_collect_hooks)

    @model_validator(mode="after")
    def _no_allowlist(self) -> StepVerifierConfig:
        refuse_allowlist(self.network_mode, self.allowed_hosts)
        return self


class StepConfig(Section):
    """One ``[[steps]]`` entry: its name (a folder under ``steps/``), its agent and
    verifier settings, and the reward it must reach for the next step to run."""

    name: str
    agent: StepAgentConfig = Field(default_factory=StepAgentConfig)
    verifier: StepVerifierConfig = Field(default_factory=StepVerifierConfig)
    min_reward: float | dict[str, float] | None = None
    healthcheck: Any = None
    artifacts: Any = None

    @field_validator("name")
    @classmethod
    def _a_portable_folder_name(cls, value: str) -> str:
        if (
            not value.strip()
            or value in {".", ".."}
            or value.endswith((".", " "))
            or _BAD_STEP_CHARS.search(value)
            or _DEVICE_NAME.fullmatch(value.partition(".")[0].rstrip(" "))
            or len(value.encode("utf-8")) > 255
        ):
            raise ValueError(
                f"step name {value!r} must be one portable folder name: not empty, no "
                'path separator, control character or <>:"|?*, no trailing dot or '
                "space, no device name, at most 255 bytes"
            )
        return value

    @field_validator("healthcheck")
    @classmethod
    def _no_step_healthcheck(cls, value: Any) -> Any:
        # After the first step, a failing check cannot be told apart from the agent's
        # doing (it may have stopped the service): neither invalid nor a 0 would be right.
        raise not_supported("per-step healthchecks ([steps.healthcheck])")

    @field_validator("artifacts")
    @classmethod
    def _no_step_artifacts(cls, value: Any) -> Any:
        if value:
            raise not_supported("artifact collection (steps.artifacts)")
        return value

    def passes_gate(self, metrics: dict[str, float] | None) -> bool:
        """Whether the next step runs after rewards ``metrics`` (Harbor's ``min_reward``:
        a number gates the ``reward`` metric, a table each metric it names; a missing
        metric, or no reward at all, is below any threshold)."""
        if self.min_reward is None:
            return True
        thresholds = (
            self.min_reward if isinstance(self.min_reward, dict) else {"reward": self.min_reward}
        )
        got = metrics or {}
        return all(got.get(key, float("-inf")) >= limit for key, limit in thresholds.items())


MultiStepRewardStrategy = Literal["mean", "final"]


class TaskConfig(Section):
    """The whole ``task.toml``."""

    schema_version: str | None = None
    version: str | None = None  # Harbor's older name for schema_version
    task: PackageInfo | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    source: str | None = None
    agent: AgentConfig = Field(default_factory=AgentConfig)
    verifier: VerifierConfig = Field(default_factory=VerifierConfig)
    environment: EnvironmentConfig = Field(default_factory=EnvironmentConfig)
    solution: SolutionConfig = Field(default_factory=SolutionConfig)
    steps: list[StepConfig] | None = None
    multi_step_reward_strategy: MultiStepRewardStrategy | None = None
    artifacts: list[ArtifactEntry] = Field(default_factory=list)

    @field_validator("artifacts", mode="before")
    @classmethod
    def _entries_from_paths(cls, value: Any) -> Any:
        # Harbor's short form: a bare path is an entry with that source.
        if isinstance(value, list):
            return [{"source": v} if isinstance(v, str) else v for v in value]
        return value

    @field_validator("steps")
    @classmethod
    def _unique_step_names(cls, steps: list[StepConfig] | None) -> list[StepConfig] | None:
        seen: set[str] = set()
        for step in steps or []:
            # As Harbor: names that one folder on a case-insensitive disk would hold.
            key = unicodedata.normalize("NFC", step.name).casefold()
            if key in seen:
                raise ValueError(f"step names must be unique (ignoring case): {step.name!r}")
            seen.add(key)
        return steps

    @model_validator(mode="after")
    def _artifacts_are_not_the_reward(self) -> TaskConfig:
        reward_dir = self.verifier.reward_dir
        for entry in self.artifacts:
            if under(entry.source, reward_dir) or under(reward_dir, entry.source):
                raise ValueError(
                    f"artifact source {entry.source!r} would hand the reward folder "
                    f"{reward_dir} to the agent"
                )
        return self

    @property
    def artifact_entries(self) -> list[ArtifactEntry]:
        """Every artifact, Harbor's way: ``/logs/artifacts`` first unless an entry names
        it (an explicit entry, say with ``exclude``, replaces the implicit one)."""
        entries = list(self.artifacts)
        if not any(e.source == ARTIFACTS_DIR for e in entries):
            entries.insert(0, ArtifactEntry(source=ARTIFACTS_DIR))
        return entries

    @model_validator(mode="after")
    def _one_agent_network(self) -> TaskConfig:
        # The agent's container keeps the network it started with through every step.
        for step in self.steps or []:
            mode = step.agent.network_mode
            if mode is not None and (mode == "public") != self.agent_network:
                raise not_supported(
                    f"step {step.name!r}: an agent network_mode ({mode!r}) other than the "
                    "task's; the agent's container keeps one network through every step"
                )
        return self

    @property
    def reward_strategy(self) -> MultiStepRewardStrategy:
        """How a multi-step task's steps make its score: Harbor's default is ``mean``."""
        return self.multi_step_reward_strategy or "mean"

    @property
    def agent_network(self) -> bool:
        """Whether the agent phase has a network: ``[agent] network_mode`` when set,
        else the environment's."""
        if self.agent.network_mode is not None:
            return self.agent.network_mode == "public"
        return self.environment.network_public

    @property
    def verifier_network(self) -> bool:
        """Whether the verifier's own container has a network: only when the task asks
        for one, by ``[verifier] network_mode = "public"`` or, for a separate verifier,
        by its ``[verifier.environment]`` saying so (``network_mode`` or
        ``allow_internet``); never by default."""
        if self.verifier.network_mode is not None:
            return self.verifier.network_mode == "public"
        env = self.verifier.environment
        if self.verifier.separate and env is not None:
            return env.network_mode == "public" or (
                env.network_mode is None and env.allow_internet is True
            )
        return False
