"""A Harbor-layout task: its folder, and the typed model of its ``task.toml``.

Layout::

    task.toml  instruction.md  environment/Dockerfile  tests/test.sh  solution/solve.sh

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

DEFAULT_REWARD_PATH = "/logs/verifier/reward.txt"
_TEMPLATE_RE = re.compile(r"\$\{([^}:]+)(?::-(.*))?\}")  # Harbor's, whole values only
_FROM_RE = re.compile(r"\A(\s*FROM\s+(?:--\S+\s+)*)(\S+)(.*)\Z", re.IGNORECASE | re.DOTALL)
_MEMORY_RE = re.compile(r"\A(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\Z", re.IGNORECASE)
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
    environment: Any = None
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

    @field_validator("environment_mode")
    @classmethod
    def _no_separate_environment(cls, value: str | None) -> str | None:
        if value == "separate":
            raise _not_supported("a separate verifier environment (environment_mode 'separate')")
        return value

    @field_validator("environment")
    @classmethod
    def _no_verifier_environment(cls, value: Any) -> Any:
        raise _not_supported("a separate verifier environment ([verifier.environment])")

    @model_validator(mode="after")
    def _no_allowlist(self) -> VerifierConfig:
        _refuse_allowlist(self.network_mode, self.allowed_hosts)
        return self

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
    steps: Any = None
    multi_step_reward_strategy: Any = None
    artifacts: Any = None

    @field_validator("steps", "multi_step_reward_strategy")
    @classmethod
    def _single_step_only(cls, value: Any) -> Any:
        raise _not_supported("multi-step tasks ([[steps]], multi_step_reward_strategy)")

    @field_validator("artifacts")
    @classmethod
    def _no_artifacts(cls, value: Any) -> Any:
        if value:
            raise _not_supported("artifact collection (artifacts)")
        return value

    @property
    def agent_network(self) -> bool:
        """Whether the agent phase has a network: ``[agent] network_mode`` when set,
        else the environment's."""
        if self.agent.network_mode is not None:
            return self.agent.network_mode == "public"
        return self.environment.network_public

    @property
    def verifier_network(self) -> bool:
        """Whether the sealed verifier has a network of its own: only when the task
        sets ``[verifier] network_mode = "public"``."""
        return self.verifier.network_mode == "public"


@dataclass(frozen=True)
class Task:
    """A loaded task: where its parts are, its config, and what was kept but not understood."""

    root: Path
    config: TaskConfig
    warnings: tuple[TaskWarning, ...] = field(default=())
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
    def solution_dir(self) -> Path:
        return self.root / "solution"

    @property
    def dockerfile(self) -> Path | None:
        """``environment/Dockerfile``, or None when the task names a prebuilt image."""
        path = self.environment_dir / "Dockerfile"
        return path if path.is_file() else None

    @property
    def instruction(self) -> str:
        return (self.root / "instruction.md").read_text(encoding="utf-8")


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
    "verifier.environment_mode": "read: shared; separate refused",
    "verifier.environment": "refused: separate verifier environments",
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
    "multi_step_reward_strategy": "refused: multi-step tasks",
    "steps": "refused: multi-step tasks",
    "artifacts": "refused: artifact collection",
}


# Tables whose fields are listed one by one: a new field in them is not covered.
HARBOR_SECTIONS = ("agent", "verifier", "environment", "solution")


def harbor_field_status(field_path: str) -> str | None:
    """What cleanroom does with a Harbor field (`HARBOR_FIELDS`), or None if unlisted."""
    if field_path in HARBOR_SECTIONS:
        return "a section"
    parts = field_path.replace("[]", "").split(".")
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
    """Load a Harbor task folder; raise `TaskLayoutError` or `TaskConfigError` naming the fix."""
    root = Path(task_dir).resolve()
    if not root.is_dir():
        raise TaskLayoutError(root, "the folder itself")
    for rel in _REQUIRED:
        if not (root / rel).is_file():
            raise TaskLayoutError(root, rel)
    config, warnings = parse_task_toml((root / "task.toml").read_text(encoding="utf-8"), root)
    if config.environment.docker_image is None and not (root / "environment/Dockerfile").is_file():
        raise TaskLayoutError(root, "environment/Dockerfile (or [environment] docker_image)")
    compose = _compose_of(root, config)
    if compose is not None:
        where = "environment/docker-compose.yaml"
        warnings += [TaskWarning(None, f"{where}: {w}") for w in compose.warnings]
    return Task(root, config, tuple(warnings), compose)


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
