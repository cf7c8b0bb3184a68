"""The sections of ``task.toml`` the agent phase and the verifier read: agent, healthcheck,
solution, package, collect hooks, verifier."""

from __future__ import annotations

import posixpath
import re
from typing import Any, Literal

from pydantic import (
    Field,
    field_validator,
    model_validator,
)

from cleanroom.verifiers.container.task.compose_model import MAIN
from cleanroom.verifiers.container.task.environment_config import EnvironmentConfig
from cleanroom.verifiers.container.task.section_rules import (
    DEFAULT_REWARD_PATH,
    VERIFIER_PLACES,
    NetworkMode,
    Section,
    absolute_path,
    refuse_allowlist,
    user_name,
)


class AgentConfig(Section):
    """``[agent]``: how long the agent phase may run, as whom, and its network."""

    timeout_sec: float = Field(default=600.0, gt=0)
    user: str | None = None
    network_mode: NetworkMode | None = None
    allowed_hosts: list[str] | None = None

    _user = field_validator("user", mode="before")(user_name)

    @model_validator(mode="after")
    def _no_allowlist(self) -> AgentConfig:
        refuse_allowlist(self.network_mode, self.allowed_hosts)
        return self


class SolutionConfig(Section):
    """``[solution]``: the environment solve.sh runs with (``${VAR}`` templates allowed)."""

    env: dict[str, str] = Field(default_factory=dict)


class PackageInfo(Section):
    """``[task]``: the task's package identity in Harbor's registry (kept, not used)."""

    name: str
    version: str | None = Field(default=None, min_length=1)
    description: str = ""
    authors: list[dict[str, Any]] = Field(default_factory=list)
    keywords: list[str] = Field(default_factory=list)

    @field_validator("name")
    @classmethod
    def _org_slash_name(cls, value: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9_-][A-Za-z0-9_.-]*/[A-Za-z0-9_-][A-Za-z0-9_.-]*", value):
            raise ValueError(f"name must be 'org/name', got {value!r}")
        return value

    @field_validator("authors")
    @classmethod
    def _authors_have_names(cls, values: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for author in values:
            if not isinstance(author.get("name"), str):
                raise ValueError("every author needs a name")
        return values


class CollectHook(Section):
    """``[[verifier.collect]]``: a command run in a service once the agent phase ends,
    before the verifier (Harbor's collect hook: best effort, its failure recorded)."""

    command: str
    service: str = MAIN
    timeout_sec: float = Field(default=60.0, gt=0)
    user: str | None = None

    _user = field_validator("user", mode="before")(user_name)

    @field_validator("service")
    @classmethod
    def _service_is_named(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("service must not be empty")
        return value


class VerifierConfig(Section):
    """``[verifier]``: how test.sh runs and where its reward is read from."""

    timeout_sec: float = Field(default=600.0, gt=0)
    # uid 0 rather than the name "root": it works in images with no passwd entry for root.
    user: str = "0"
    # Literal values, or ``${VAR}`` / ``${VAR:-default}`` read from the host (`resolve_env`).
    env: dict[str, str] = Field(default_factory=dict)
    # The sealed verifier's network: none unless the task asks for "public".
    network_mode: NetworkMode | None = None
    allowed_hosts: list[str] | None = None
    environment_mode: Literal["shared", "separate"] | None = None
    # The separate verifier's environment (`verifier_environment`); its own refusals apply.
    environment: EnvironmentConfig | None = None
    collect: list[CollectHook] = Field(default_factory=list)
    reward_path: str = DEFAULT_REWARD_PATH
    result_paths: list[str] = Field(default_factory=list)
    setup_commands: list[str] = Field(default_factory=list)
    live_processes: bool = False
    # Sealed mode: paths besides the work dir whose agent version the verifier sees (an
    # installed program under test, a config file under /etc). Everything else it sees
    # comes from the pristine image. Naming a folder the verifier's own tools search
    # (a PATH folder, site-packages) hands that search to the agent: name files instead.
    state: list[str] = Field(default_factory=list)
    state_cap_mb: int = Field(default=1024, gt=0)

    _user = field_validator("user", mode="before")(user_name)

    @model_validator(mode="after")
    def _no_allowlist(self) -> VerifierConfig:
        refuse_allowlist(self.network_mode, self.allowed_hosts)
        return self

    @model_validator(mode="after")
    def _one_environment_mode(self) -> VerifierConfig:
        # Harbor's rule: an environment of the verifier's own means a separate one.
        if self.environment_mode == "shared" and self.environment is not None:
            raise ValueError(
                "environment_mode = 'shared' is incompatible with [verifier.environment]; "
                "omit the environment or set environment_mode = 'separate'"
            )
        if self.separate and self.live_processes:
            raise ValueError(
                "live_processes needs the agent's processes, which a separate verifier "
                "environment never sees (Harbor stops the agent's container first)"
            )
        return self

    @property
    def separate(self) -> bool:
        """Whether test.sh runs in an environment of its own (Harbor's separate mode):
        ``environment_mode = "separate"``, or a ``[verifier.environment]`` without a mode."""
        if self.environment_mode is not None:
            return self.environment_mode == "separate"
        return self.environment is not None

    @field_validator("reward_path")
    @classmethod
    def _reward_path_is_a_file_in_its_own_folder(cls, value: str) -> str:
        path = absolute_path(value, "reward_path")
        if posixpath.dirname(path) == "/":
            raise ValueError("reward_path must be inside a folder (sealed mounts that folder)")
        return path

    @field_validator("result_paths")
    @classmethod
    def _paths_areabsolute_path(cls, values: list[str]) -> list[str]:
        return [absolute_path(v, "path") for v in values]

    @field_validator("state")
    @classmethod
    def _state_is_the_agents_not_the_verifiers(cls, values: list[str]) -> list[str]:
        paths = [absolute_path(v, "state path") for v in values]
        for path in paths:
            if path == "/" or any(path == t or path.startswith(t + "/") for t in VERIFIER_PLACES):
                raise ValueError(
                    f"state path {path!r} would hand the verifier's own places "
                    "(/, /tests, /logs) to the agent"
                )
        return paths

    @field_validator("user")
    @classmethod
    def _user_is_named(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("user must not be empty")
        return value

    @property
    def reward_dir(self) -> str:
        """The folder the reward lives in: sealed mode mounts a fresh one there."""
        return posixpath.dirname(self.reward_path)

    @property
    def reward_json_path(self) -> str:
        """``reward.json`` beside the text reward; when present it is read instead."""
        stem = posixpath.splitext(posixpath.basename(self.reward_path))[0]
        return posixpath.join(self.reward_dir, f"{stem}.json")

    @property
    def reward_paths(self) -> tuple[str, str]:
        """Both reward files, JSON first (the order they are looked for)."""
        return (self.reward_json_path, self.reward_path)
