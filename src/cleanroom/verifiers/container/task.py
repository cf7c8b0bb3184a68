"""A Harbor-layout task: its folder, and the typed model of its ``task.toml``.

Layout::

    task.toml  instruction.md  environment/Dockerfile  tests/test.sh  solution/solve.sh

or, for a multi-step task (``[[steps]]``), no top-level ``instruction.md`` and a folder a
step: ``steps/<name>/instruction.md``, ``steps/<name>/tests/``, ``steps/<name>/solution/``.

Every field of Harbor's task model (pinned: ``tests/data/harbor/task-fields.json``) is
either read with Harbor's meaning or refused by name (`HARBOR_FIELDS` says which, and
why): a field that would change what runs is never silently ignored. Keys neither Harbor
nor cleanroom knows are kept (``extra``) and reported as warnings naming their line, as
Harbor ignores them too. A malformed file, a known key with a wrong value, or a refused
field is a `TaskConfigError` naming the line and the field.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import re
import tomllib
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from cleanroom.verifiers.container.compose import MAIN, ComposeError, ComposeProject, load_compose
from cleanroom.verifiers.container.tamper import under

DEFAULT_REWARD_PATH = "/logs/verifier/reward.txt"
# Harbor's folder for what the agent leaves the verifier: always an artifact.
ARTIFACTS_DIR = "/logs/artifacts"
MANIFEST_NAME = "manifest.json"  # Harbor's record of a collection, beside the artifacts
_TEMPLATE_RE = re.compile(r"\$\{([^}:]+)(?::-(.*))?\}")  # Harbor's, whole values only
_FROM_RE = re.compile(r"\A(\s*FROM\s+(?:--\S+\s+)*)(\S+)(.*)\Z", re.IGNORECASE | re.DOTALL)
_MEMORY_RE = re.compile(r"\A(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\Z", re.IGNORECASE)
_BAD_STEP_CHARS = re.compile(r'[<>:"/\\|?*\x00-\x1f\x7f]')
_DEVICE_NAME = re.compile(r"(CON|PRN|AUX|NUL|CONIN\$|CONOUT\$|(?:COM|LPT)[1-9¹²³])", re.IGNORECASE)
_MEMORY_UNITS = {"": 1 / (1 << 20), "k": 1 / 1024, "m": 1, "g": 1024, "t": 1 << 20}


class TaskError(Exception):
    """A task folder that cannot be used as it is."""


class TaskLayoutError(TaskError):
    """A file the Harbor layout requires is missing."""

    def __init__(self, task_dir: Path, missing: str) -> None:
        self.task_dir = task_dir
        self.missing = missing
        super().__init__(f"{task_dir}: not a Harbor task folder, {missing} is missing")


class TaskConfigError(TaskError):
    """``task.toml`` is malformed or holds a value that cannot be used."""

    def __init__(self, path: Path, line: int | None, message: str) -> None:
        self.path = path
        self.line = line
        self.message = message
        where = f"{path}, line {line}" if line else str(path)
        super().__init__(f"{where}: {message}")


@dataclass(frozen=True)
class TaskWarning:
    """A key that was kept but is not understood (or not enforced) by cleanroom."""

    line: int | None
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}" if self.line else self.message


class _Section(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)


NetworkMode = Literal["no-network", "public", "allowlist"]


def _user_name(value: Any) -> Any:
    """Harbor takes a user as a name or a uid; cleanroom passes it to Docker as text."""
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


def _not_supported(what: str) -> ValueError:
    return ValueError(f"not supported by cleanroom: {what}")


def _refuse_allowlist(mode: str | None, hosts: list[str] | None) -> None:
    if mode == "allowlist" or hosts:
        raise _not_supported(
            "network_mode 'allowlist' and allowed_hosts (an egress allowlist); "
            "use 'no-network' or 'public'"
        )


def _shared_verifier_only(value: str | None) -> str | None:
    if value == "separate":
        raise _not_supported("a separate verifier environment (environment_mode 'separate')")
    return value


def _no_verifier_environment(value: Any) -> Any:
    raise _not_supported("a separate verifier environment ([verifier.environment])")


def _no_collect_hooks(value: Any) -> Any:
    raise _not_supported("a step's collect hooks ([[steps.verifier.collect]])")


class AgentConfig(_Section):
    """``[agent]``: how long the agent phase may run, as whom, and its network."""

    timeout_sec: float = Field(default=600.0, gt=0)
    user: str | None = None
    network_mode: NetworkMode | None = None
    allowed_hosts: list[str] | None = None

    _user = field_validator("user", mode="before")(_user_name)

    @model_validator(mode="after")
    def _no_allowlist(self) -> AgentConfig:
        _refuse_allowlist(self.network_mode, self.allowed_hosts)
        return self


class HealthcheckConfig(_Section):
    """``[environment.healthcheck]``: Docker HEALTHCHECK's options, as Harbor reads them.

    The command runs (``bash -c``, as in Harbor) until it exits 0; during the start
    period failures do not count and attempts are ``start_interval_sec`` apart, after it
    they are ``interval_sec`` apart and ``retries`` consecutive failures give up.
    """

    command: str
    interval_sec: float = Field(default=5.0, ge=0)
    timeout_sec: float = Field(default=30.0, gt=0)
    start_period_sec: float = Field(default=0.0, ge=0)
    start_interval_sec: float = Field(default=5.0, ge=0)
    retries: int = Field(default=3, ge=1)


class SolutionConfig(_Section):
    """``[solution]``: the environment solve.sh runs with (``${VAR}`` templates allowed)."""

    env: dict[str, str] = Field(default_factory=dict)


class PackageInfo(_Section):
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


class CollectHook(_Section):
    """``[[verifier.collect]]``: a command run in a service once the agent phase ends,
    before the verifier (Harbor's collect hook: best effort, its failure recorded)."""

    command: str
    service: str = MAIN
    timeout_sec: float = Field(default=60.0, gt=0)
    user: str | None = None

    _user = field_validator("user", mode="before")(_user_name)

    @field_validator("service")
    @classmethod
    def _service_is_named(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("service must not be empty")
        return value


class VerifierConfig(_Section):
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

    _user = field_validator("user", mode="before")(_user_name)

    @model_validator(mode="after")
    def _no_allowlist(self) -> VerifierConfig:
        _refuse_allowlist(self.network_mode, self.allowed_hosts)
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
        path = _absolute(value, "reward_path")
        if posixpath.dirname(path) == "/":
            raise ValueError("reward_path must be inside a folder (sealed mounts that folder)")
        return path

    @field_validator("result_paths")
    @classmethod
    def _paths_are_absolute(cls, values: list[str]) -> list[str]:
        return [_absolute(v, "path") for v in values]

    @field_validator("state")
    @classmethod
    def _state_is_the_agents_not_the_verifiers(cls, values: list[str]) -> list[str]:
        paths = [_absolute(v, "state path") for v in values]
        for path in paths:
            if path == "/" or any(path == t or path.startswith(t + "/") for t in _VERIFIERS):
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


class EnvironmentConfig(_Section):
    """``[environment]``: the image, network, limits, environment and readiness check."""

    # cleanroom's own switch, kept for its tasks; Harbor's network_mode and its legacy
    # allow_internet take precedence (`agent_network`).
    network: bool | None = None
    network_mode: NetworkMode | None = None
    allowed_hosts: list[str] | None = None
    allow_internet: bool | None = None
    docker_image: str | None = None
    os: Literal["linux", "windows"] = "linux"
    memory_mb: int | None = Field(default=None, gt=0)
    memory: str | None = None
    cpus: float | None = Field(default=None, gt=0)
    pids_limit: int | None = Field(default=None, gt=0)
    storage_mb: Any = None
    storage: Any = None
    gpus: int | None = Field(default=None, ge=0)
    gpu_types: list[str] | None = None
    tpu: Any = None
    mcp_servers: list[Any] = Field(default_factory=list)
    skills_dir: Any = None
    env: dict[str, str] = Field(default_factory=dict)
    healthcheck: HealthcheckConfig | None = None
    workdir: str | None = None
    build_timeout_sec: float = Field(default=600.0, gt=0)

    @field_validator("os", mode="before")
    @classmethod
    def _linux_only(cls, value: Any) -> Any:
        if isinstance(value, str) and value.lower() == "windows":
            raise _not_supported("Windows containers (os = 'windows')")
        return value.lower() if isinstance(value, str) else value

    @field_validator("storage_mb", "storage")
    @classmethod
    def _a_disk_size(cls, value: Any) -> Any:
        # Kept as Harbor's docker environment keeps it: read, and enforced by neither (no
        # disk quota on the container's layer; the state the verifier reads is capped by
        # [verifier] state_cap_mb).
        if value is not None and not isinstance(value, int | str):
            raise ValueError(
                f"a disk size is a number of MB or a size such as '10G', not {value!r}"
            )
        return value

    @field_validator("gpus")
    @classmethod
    def _no_gpus(cls, value: int | None) -> int | None:
        if value:
            raise _not_supported("GPUs (gpus > 0)")
        return value

    @field_validator("gpu_types")
    @classmethod
    def _no_gpu_types(cls, value: list[str] | None) -> list[str] | None:
        if value:
            raise _not_supported("GPU types (gpu_types)")
        return value

    @field_validator("tpu")
    @classmethod
    def _no_tpu(cls, value: Any) -> Any:
        raise _not_supported("TPUs ([environment.tpu])")

    @field_validator("mcp_servers")
    @classmethod
    def _no_mcp_servers(cls, value: list[Any]) -> list[Any]:
        if value:
            raise _not_supported("MCP servers for the agent ([[environment.mcp_servers]])")
        return value

    @field_validator("skills_dir")
    @classmethod
    def _no_skills(cls, value: Any) -> Any:
        raise _not_supported("an agent skills folder (skills_dir)")

    @field_validator("memory")
    @classmethod
    def _memory_has_a_unit_we_read(cls, value: str | None) -> str | None:
        if value is not None and not _MEMORY_RE.match(value.strip()):
            raise ValueError(f"memory must look like 512M or 2G, got {value!r}")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> EnvironmentConfig:
        _refuse_allowlist(self.network_mode, self.allowed_hosts)
        both = self.memory is not None and self.memory_mb is not None
        if both and self._memory_from_text() != self.memory_mb:
            raise ValueError(f"memory = {self.memory!r} and memory_mb = {self.memory_mb} disagree")
        return self

    @property
    def network_public(self) -> bool:
        """The environment's network: ``network_mode``, else ``allow_internet``, else
        cleanroom's ``network``; public when the task says nothing, as in Harbor."""
        if self.network_mode is not None:
            return self.network_mode == "public"
        if self.allow_internet is not None:
            return self.allow_internet
        return True if self.network is None else self.network

    @property
    def memory_limit_mb(self) -> int | None:
        """The memory limit in MiB from ``memory_mb`` or ``memory``, or None for none."""
        if self.memory_mb is not None:
            return self.memory_mb
        return self._memory_from_text()

    def _memory_from_text(self) -> int | None:
        if self.memory is None:
            return None
        m = _MEMORY_RE.match(self.memory.strip())
        assert m is not None  # checked by the validator
        return max(1, int(float(m[1]) * _MEMORY_UNITS[m[2].lower()]))


VerifierConfig.model_rebuild()  # its [verifier.environment] is an EnvironmentConfig


class ArtifactEntry(_Section):
    """One entry of ``artifacts``: a path the agent leaves, carried to the verifier at
    that same path and collected on the host (under ``destination`` when given)."""

    source: str
    destination: str | None = None
    # Harbor's ``tar --exclude`` patterns: what matches is neither collected nor carried.
    exclude: list[str] = Field(default_factory=list)
    service: str | None = None

    @field_validator("source")
    @classmethod
    def _source_is_the_agents(cls, value: str) -> str:
        path = _absolute(value, "artifact source")
        if path == "/" or any(under(path, t) or under(t, path) for t in _VERIFIERS[:1]):
            raise ValueError(
                f"artifact source {path!r} would hand the verifier's /tests to the agent"
            )
        if under(path, "/logs") and not under(path, ARTIFACTS_DIR):
            # The rest of /logs is the harness's (the verifier's reward, the agent's logs).
            raise ValueError(
                f"artifact source {path!r}: under /logs, only {ARTIFACTS_DIR} is the agent's"
            )
        return path

    @field_validator("destination")
    @classmethod
    def _destination_stays_in_the_artifacts_folder(cls, value: str | None) -> str | None:
        if not value:
            return None
        parts = value.split("/")
        if "\\" in value or value.startswith("/") or ".." in parts:
            raise ValueError(
                f"artifact destination must be a relative path without '..', got {value!r}"
            )
        if value.rstrip("/") == MANIFEST_NAME:
            raise ValueError(f"artifact destination {MANIFEST_NAME!r} is the collection's record")
        return posixpath.normpath(value)

    @field_validator("service")
    @classmethod
    def _main_service_only(cls, value: str | None) -> str | None:
        if value not in (None, "main"):
            raise _not_supported(f"artifacts of a compose service (service = {value!r})")
        return None

    @property
    def host_path(self) -> str:
        """Where it is collected, relative to the artifacts folder (Harbor's layout)."""
        return self.destination or self.source.lstrip("/")


class StepAgentConfig(_Section):
    """``[steps.agent]``: a step's agent phase; what it leaves unset is the task's."""

    timeout_sec: float | None = Field(default=None, gt=0)
    user: str | None = None
    network_mode: NetworkMode | None = None
    allowed_hosts: list[str] | None = None

    _user = field_validator("user", mode="before")(_user_name)

    @model_validator(mode="after")
    def _no_allowlist(self) -> StepAgentConfig:
        _refuse_allowlist(self.network_mode, self.allowed_hosts)
        return self


class StepVerifierConfig(_Section):
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

    _user = field_validator("user", mode="before")(_user_name)
    _shared_only = field_validator("environment_mode")(_shared_verifier_only)
    _no_environment = field_validator("environment")(_no_verifier_environment)
    _no_collect = field_validator("collect")(_no_collect_hooks)

    @model_validator(mode="after")
    def _no_allowlist(self) -> StepVerifierConfig:
        _refuse_allowlist(self.network_mode, self.allowed_hosts)
        return self


class StepConfig(_Section):
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
        raise _not_supported("per-step healthchecks ([steps.healthcheck])")

    @field_validator("artifacts")
    @classmethod
    def _no_step_artifacts(cls, value: Any) -> Any:
        if value:
            raise _not_supported("artifact collection (steps.artifacts)")
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


class TaskConfig(_Section):
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
                raise _not_supported(
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


@dataclass(frozen=True)
class TaskStep:
    """One step of a multi-step task: its config and its folder ``steps/<name>/``.

    The step's tests are the task's ``tests/`` with the step's ``tests/`` copied over
    them (its ``test.sh`` wins); its solution is the step's ``solution/`` when it has
    one, else the task's, as Harbor's oracle finds them.
    """

    config: StepConfig
    root: Path
    task_root: Path

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def instruction(self) -> str:
        return (self.root / "instruction.md").read_text(encoding="utf-8")

    @property
    def tests_dirs(self) -> tuple[Path, ...]:
        """The folders copied to ``/tests`` for this step, in order, later ones on top."""
        return tuple(d for d in (self.task_root / "tests", self.root / "tests") if d.is_dir())

    @property
    def solution_dir(self) -> Path:
        own = self.root / "solution"
        return own if own.is_dir() else self.task_root / "solution"


@dataclass(frozen=True)
class Task:
    """A loaded task: where its parts are, its config, and what was kept but not understood."""

    root: Path
    config: TaskConfig
    warnings: tuple[TaskWarning, ...] = field(default=())
    # Harbor's ``[[steps]]`` in order; empty for a single-step task.
    steps: tuple[TaskStep, ...] = field(default=())
    # ``environment/docker-compose.yaml``: the services beside the agent's container.
    compose: ComposeProject | None = None

    @property
    def name(self) -> str:
        return self.root.name

    @property
    def environment_dir(self) -> Path:
        return self.root / "environment"

    @property
    def tests_dir(self) -> Path:
        return self.root / "tests"

    @property
    def tests_dirs(self) -> tuple[Path, ...]:
        """The folders copied to ``/tests`` of a single-step task."""
        return (self.tests_dir,)

    @property
    def solution_dir(self) -> Path:
        return self.root / "solution"

    @property
    def dockerfile(self) -> Path | None:
        """``environment/Dockerfile``, or None when the task names a prebuilt image."""
        path = self.environment_dir / "Dockerfile"
        return path if path.is_file() else None

    @property
    def instruction(self) -> str:
        """The task's instruction; empty for a multi-step task, as in Harbor (each step
        has its own, `TaskStep.instruction`)."""
        if self.steps:
            return ""
        return (self.root / "instruction.md").read_text(encoding="utf-8")

    def verifier_environment(self) -> VerifierEnvironment | None:
        """Where a separate verifier runs, or None when test.sh runs where the agent
        acted. Harbor's order: ``[verifier.environment] docker_image``, else an image
        built from ``tests/`` (its Dockerfile), both holding ``/tests`` themselves; else
        the task's own environment, with the tests copied in. Resources, environment
        variables, work dir and readiness check come from ``[verifier.environment]``,
        else from ``[environment]``."""
        verifier = self.config.verifier
        if not verifier.separate:
            return None
        own = verifier.environment
        config = own if own is not None else self.config.environment
        if own is not None and own.docker_image:
            return VerifierEnvironment(config, None, own.docker_image, bundled_tests=True)
        if (self.tests_dir / "Dockerfile").is_file():
            return VerifierEnvironment(config, self.tests_dir, None, bundled_tests=True)
        if self.dockerfile is not None:
            return VerifierEnvironment(config, self.environment_dir, None, bundled_tests=False)
        return VerifierEnvironment(
            config, None, self.config.environment.docker_image, bundled_tests=False
        )


@dataclass(frozen=True)
class VerifierEnvironment:
    """A separate verifier's environment: its config, and its image, built from
    ``build_dir`` (a folder with a Dockerfile) or named by ``image``. With
    ``bundled_tests`` the image holds ``/tests`` and the task's tests are not copied in."""

    config: EnvironmentConfig
    build_dir: Path | None
    image: str | None
    bundled_tests: bool


_VERIFIERS = ("/tests", "/logs")  # the verifier's own places, never the agent's state
_REQUIRED = ("task.toml", "instruction.md", "tests/test.sh")

# Every field of Harbor's task model, by its dotted path in task.toml (a list of tables is
# ``name[]``), and what cleanroom does with it: "read" (Harbor's meaning), "kept" (carried,
# it changes nothing that runs), or the reason it is refused. A path covers the fields
# under it. tests/unit/container/test_harbor_fields.py holds this to the pinned release.
HARBOR_FIELDS: dict[str, str] = {
    "schema_version": "kept",
    "version": "kept",
    "task": "kept",
    "metadata": "kept",
    "source": "kept",
    "agent.timeout_sec": "read",
    "agent.user": "read",
    "agent.network_mode": "read: no-network or public; allowlist refused",
    "agent.allowed_hosts": "refused: egress allowlists",
    "verifier.timeout_sec": "read",
    "verifier.env": "read, with ${VAR} and ${VAR:-default} from the host",
    "verifier.user": "read",
    "verifier.network_mode": "read: the sealed verifier's network; allowlist refused",
    "verifier.allowed_hosts": "refused: egress allowlists",
    "verifier.environment_mode": "read: shared, or separate (test.sh in its own container)",
    "verifier.environment": "read: the separate verifier's environment, as [environment]",
    "verifier.environment.allowed_hosts": "refused: egress allowlists",
    "verifier.environment.gpu_types": "refused: GPUs",
    "verifier.environment.tpu": "refused: TPUs",
    "verifier.environment.mcp_servers": "refused: MCP servers",
    "verifier.environment.skills_dir": "refused: agent skills",
    "verifier.collect": "read: main's before it stops; the services' after (sealed) or beside it",
    "environment.network_mode": "read: no-network or public; allowlist refused",
    "environment.allowed_hosts": "refused: egress allowlists",
    "environment.allow_internet": "read",
    "environment.build_timeout_sec": "read",
    "environment.docker_image": "read: used when there is no Dockerfile",
    "environment.os": "read: linux; windows refused",
    "environment.cpus": "read",
    "environment.memory_mb": "read",
    "environment.memory": "read",
    "environment.storage_mb": "kept: enforced by neither Harbor's docker environment nor cleanroom",
    "environment.storage": "kept: enforced by neither Harbor's docker environment nor cleanroom",
    "environment.gpus": "read: 0; more refused",
    "environment.gpu_types": "refused: GPUs",
    "environment.tpu": "refused: TPUs",
    "environment.mcp_servers": "refused: MCP servers",
    "environment.env": "read, with ${VAR} and ${VAR:-default} from the host",
    "environment.skills_dir": "refused: agent skills",
    "environment.healthcheck": "read: waited for before the agent phase",
    "environment.workdir": "read",
    "solution.env": "read, with ${VAR} and ${VAR:-default} from the host",
    "multi_step_reward_strategy": "read: mean (the default) or final over the steps' rewards",
    "steps.name": "read: the step's folder under steps/",
    "steps.agent.timeout_sec": "read: the task's when unset",
    "steps.agent.user": "read: the task's when unset",
    "steps.agent.network_mode": "read: the task's agent network; another one refused",
    "steps.agent.allowed_hosts": "refused: egress allowlists",
    "steps.verifier.timeout_sec": "read: 600 s when unset, as in Harbor",
    "steps.verifier.env": "read: added to [verifier.env], ${VAR} templates from the host",
    "steps.verifier.user": "read: the task's when unset",
    "steps.verifier.network_mode": "read: the step's sealed verifier network",
    "steps.verifier.allowed_hosts": "refused: egress allowlists",
    "steps.verifier.environment_mode": "read: shared; separate refused",
    "steps.verifier.environment": "refused: separate verifier environments",
    "steps.verifier.collect": "refused: a step's collect hooks",
    "steps.min_reward": "read: a step below it ends the rollout's steps",
    "steps.healthcheck": "refused: per-step healthchecks",
    "steps.artifacts": "refused: artifact collection",
    "artifacts": "read: carried into the verifier at their paths, collected on the host",
    "artifacts.service": "read: the agent's container (main); compose services refused",
}


# Tables whose fields are listed one by one: a new field in them is not covered.
HARBOR_SECTIONS = (
    "agent",
    "verifier",
    "environment",
    "solution",
    "steps",
    "steps.agent",
    "steps.verifier",
)


def harbor_field_status(field_path: str) -> str | None:
    """What cleanroom does with a Harbor field (`HARBOR_FIELDS`), or None if unlisted."""
    path = field_path.replace("[]", "")
    if path in HARBOR_SECTIONS:
        return "a section"
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        status = HARBOR_FIELDS.get(".".join(parts[:i]))
        if status is not None:
            return status
    return None


class TemplateError(TaskError):
    """A ``${VAR}`` template whose variable is unset on the host and has no default."""


def resolve_env(env: dict[str, str], host: dict[str, str], where: str) -> dict[str, str]:
    """Harbor's templates: a whole value ``${VAR}`` or ``${VAR:-default}`` is read from
    ``host``; any other value is literal. An unset variable with no default is a
    `TemplateError` naming the key and the variable."""
    resolved: dict[str, str] = {}
    for key, value in env.items():
        m = _TEMPLATE_RE.fullmatch(value)
        if m is None:
            resolved[key] = value
        elif m[1] in host:
            resolved[key] = host[m[1]]
        elif m[2] is not None:
            resolved[key] = m[2]
        else:
            raise TemplateError(
                f"{where}.{key}: the host has no variable {m[1]} and the template gives "
                "no default (${" + m[1] + ":-default})"
            )
    return resolved


def rewrite_base_images(dockerfile: str, image_map: dict[str, str]) -> str:
    """``FROM`` lines whose image is a key of ``image_map`` name its value instead."""
    out: list[str] = []
    for line in dockerfile.splitlines(keepends=True):
        m = _FROM_RE.match(line)
        if m and m[2] in image_map:
            line = f"{m[1]}{image_map[m[2]]}{m[3]}"
        out.append(line)
    return "".join(out)


def load_task(task_dir: Path | str) -> Task:
    """Load a Harbor task folder; raise `TaskLayoutError` or `TaskConfigError` naming the fix.

    A task with ``[[steps]]`` is Harbor's multi-step layout: no top-level
    ``instruction.md``; for each step ``steps/<name>/instruction.md`` and a test script,
    ``steps/<name>/tests/test.sh`` or the task's ``tests/test.sh``.
    """
    root = Path(task_dir).resolve()
    if not root.is_dir():
        raise TaskLayoutError(root, "the folder itself")
    if not (root / "task.toml").is_file():
        raise TaskLayoutError(root, "task.toml")
    config, warnings = parse_task_toml((root / "task.toml").read_text(encoding="utf-8"), root)
    if config.steps:
        steps = tuple(_load_step(root, step) for step in config.steps)
    else:
        steps = ()
        for rel in _REQUIRED:
            if not (root / rel).is_file():
                raise TaskLayoutError(root, rel)
    if config.environment.docker_image is None and not (root / "environment/Dockerfile").is_file():
        raise TaskLayoutError(root, "environment/Dockerfile (or [environment] docker_image)")
    if config.verifier.separate and (root / "tests/docker-compose.yaml").is_file():
        raise TaskConfigError(
            root / "task.toml",
            None,
            "tests/docker-compose.yaml: not supported by cleanroom: a compose verifier "
            "environment; give tests/ a Dockerfile or [verifier.environment] docker_image",
        )
    if steps and (config.verifier.separate or config.artifacts):
        raise TaskConfigError(
            root / "task.toml",
            None,
            "a multi-step task with artifacts or a separate verifier environment is not "
            "supported by cleanroom",
        )
    compose = _compose_of(root, config)
    if compose is not None:
        where = "environment/docker-compose.yaml"
        warnings += [TaskWarning(None, f"{where}: {w}") for w in compose.warnings]
    return Task(root, config, tuple(warnings), steps, compose)


def _load_step(root: Path, config: StepConfig) -> TaskStep:
    step = TaskStep(config, root / "steps" / config.name, root)
    where = f"steps/{config.name}"
    if not step.root.is_dir():
        raise TaskLayoutError(root, f"{where}/ (the folder of step {config.name!r})")
    if step.root.resolve().parent != (root / "steps").resolve():
        raise TaskError(f"{root}: {where} must be a folder inside the task, not a link out of it")
    if not (step.root / "instruction.md").is_file():
        raise TaskLayoutError(root, f"{where}/instruction.md")
    if not any((d / "test.sh").is_file() for d in step.tests_dirs):
        raise TaskLayoutError(root, f"{where}/tests/test.sh (or tests/test.sh for every step)")
    if (step.root / "workdir").exists():
        raise TaskError(
            f"{root}: {where}/workdir (files staged before a step, and its setup.sh) is "
            "not supported by cleanroom"
        )
    return step


def _compose_of(root: Path, config: TaskConfig) -> ComposeProject | None:
    """The task's compose services, ``${VAR}`` filled from the host's environment and the
    task's ``[environment.env]`` (as Harbor fills them); every collect hook must name
    ``main`` or one of them."""
    host = dict(os.environ)
    # An unfilled template is reported by the rollout itself (environment_error).
    with contextlib.suppress(TemplateError):
        host.update(resolve_env(config.environment.env, host, "environment.env"))
    try:
        compose = load_compose(root / "environment", host)
    except ComposeError as exc:
        raise TaskConfigError(exc.path, None, exc.message) from exc
    services = compose.names if compose is not None else frozenset()
    toml_text = (root / "task.toml").read_text(encoding="utf-8")
    for n, hook in enumerate(config.verifier.collect, start=1):
        if hook.service != MAIN and hook.service not in services:
            raise TaskConfigError(
                root / "task.toml",
                _line_of_key(toml_text, ("verifier", "collect")),
                f"verifier.collect[{n}].service: {hook.service!r} is not a service of "
                "environment/docker-compose.yaml",
            )
    return compose


def parse_task_toml(text: str, task_dir: Path) -> tuple[TaskConfig, list[TaskWarning]]:
    """Parse ``task.toml`` text into a `TaskConfig` and the warnings for unknown keys."""
    path = task_dir / "task.toml"
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        line = _line_from_toml_error(str(exc))
        raise TaskConfigError(path, line, f"not valid TOML: {exc}") from exc
    try:
        config = TaskConfig.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = tuple(str(part) for part in first["loc"])
        key = ".".join(loc) or "task.toml"
        line = next((n for i in range(len(loc), 0, -1) if (n := _line_of_key(text, loc[:i]))), None)
        raise TaskConfigError(path, line, f"{key}: {first['msg']}") from exc
    return config, _unknown_key_warnings(config, text)


def _absolute(value: str, what: str) -> str:
    if not value.startswith("/"):
        raise ValueError(f"{what} must be absolute, got {value!r}")
    if ".." in value.split("/"):
        raise ValueError(f"{what} must not contain '..', got {value!r}")
    return posixpath.normpath(value)


def _line_from_toml_error(message: str) -> int | None:
    m = re.search(r"line (\d+)", message)
    return int(m[1]) if m else None


def _unknown_key_warnings(config: TaskConfig, text: str) -> list[TaskWarning]:
    warnings: list[TaskWarning] = []
    sections: list[tuple[tuple[str, ...], BaseModel]] = [
        ((), config),
        (("agent",), config.agent),
        (("verifier",), config.verifier),
        (("environment",), config.environment),
        (("solution",), config.solution),
    ]
    if config.task is not None:
        sections.append((("task",), config.task))
    if config.environment.healthcheck is not None:
        sections.append((("environment", "healthcheck"), config.environment.healthcheck))
    sections.extend((("verifier", "collect"), hook) for hook in config.verifier.collect)
    for step in config.steps or []:
        # Keys of a [[steps]] table are reported under steps (no line: the tables repeat).
        sections += [
            (("steps",), step),
            (("steps", "agent"), step.agent),
            (("steps", "verifier"), step.verifier),
        ]
    for prefix, section in sections:
        for key in section.model_extra or {}:
            name = ".".join((*prefix, key))
            warnings.append(
                TaskWarning(_line_of_key(text, (*prefix, key)), f"unknown key {name} (kept)")
            )
    return warnings


def _line_of_key(text: str, loc: tuple[str, ...]) -> int | None:
    """The 1-based line where ``loc`` (``("verifier", "timeout_sec")``) is set, if found.

    tomllib reports lines only for syntax errors, so a wrong value is located by reading
    the table headers and ``key =`` lines; a key set through an inline table or a dotted
    key on another line falls back to its table's header.
    """
    if not loc:
        return None
    table, key = loc[:-1], loc[-1]
    current: tuple[str, ...] = ()
    table_line: int | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        header = re.match(r"\A\[\[?\s*([^\]]+?)\s*\]\]?", stripped)
        if header:
            current = tuple(part.strip().strip("\"'") for part in header[1].split("."))
            if current == loc:
                return number
            if current == table:
                table_line = number
            continue
        if current == table and re.match(rf"\A[\"']?{re.escape(key)}[\"']?\s*=", stripped):
            return number
    return table_line
