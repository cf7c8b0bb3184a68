"""A Harbor-layout task: its folder, and the typed model of its ``task.toml``.

Layout::

    task.toml  instruction.md  environment/Dockerfile  tests/test.sh  solution/solve.sh

Keys this module does not know are kept (``extra``) and reported as warnings naming their
line, so a task written for a newer Harbor still loads. A malformed file, or a known key
with a wrong value, is a `TaskConfigError` naming the line to fix.
"""

from __future__ import annotations

import posixpath
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

DEFAULT_REWARD_PATH = "/logs/verifier/reward.txt"
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


class AgentConfig(_Section):
    """``[agent]``: how long the agent phase may run, and as whom."""

    timeout_sec: float = Field(default=600.0, gt=0)
    user: str | None = None


class VerifierConfig(_Section):
    """``[verifier]``: how test.sh runs and where its reward is read from."""

    timeout_sec: float = Field(default=600.0, gt=0)
    # uid 0 rather than the name "root": it works in images with no passwd entry for root.
    user: str = "0"
    env: dict[str, str] = Field(default_factory=dict)
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
    """``[environment]``: network and the resource limits applied to every container."""

    network: bool = False
    memory_mb: int | None = Field(default=None, gt=0)
    memory: str | None = None
    cpus: float | None = Field(default=None, gt=0)
    pids_limit: int | None = Field(default=None, gt=0)
    workdir: str | None = None
    build_timeout_sec: float = Field(default=600.0, gt=0)

    @field_validator("memory")
    @classmethod
    def _memory_has_a_unit_we_read(cls, value: str | None) -> str | None:
        if value is not None and not _MEMORY_RE.match(value.strip()):
            raise ValueError(f"memory must look like 512M or 2G, got {value!r}")
        return value

    @property
    def memory_limit_mb(self) -> int | None:
        """The memory limit in MiB from ``memory_mb`` or ``memory``, or None for none."""
        if self.memory_mb is not None:
            return self.memory_mb
        if self.memory is None:
            return None
        m = _MEMORY_RE.match(self.memory.strip())
        assert m is not None  # checked by the validator
        return max(1, int(float(m[1]) * _MEMORY_UNITS[m[2].lower()]))


class TaskConfig(_Section):
    """The whole ``task.toml``."""

    version: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    agent: AgentConfig = Field(default_factory=AgentConfig)
    verifier: VerifierConfig = Field(default_factory=VerifierConfig)
    environment: EnvironmentConfig = Field(default_factory=EnvironmentConfig)


@dataclass(frozen=True)
class Task:
    """A loaded task: where its parts are, its config, and what was kept but not understood."""

    root: Path
    config: TaskConfig
    warnings: tuple[TaskWarning, ...] = field(default=())

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
    def instruction(self) -> str:
        return (self.root / "instruction.md").read_text(encoding="utf-8")


_VERIFIERS = ("/tests", "/logs")  # the verifier's own places, never the agent's state
_REQUIRED = ("task.toml", "instruction.md", "environment/Dockerfile", "tests/test.sh")


def load_task(task_dir: Path | str) -> Task:
    """Load a Harbor task folder; raise `TaskLayoutError` or `TaskConfigError` naming the fix."""
    root = Path(task_dir).resolve()
    if not root.is_dir():
        raise TaskLayoutError(root, "the folder itself")
    for rel in _REQUIRED:
        if not (root / rel).is_file():
            raise TaskLayoutError(root, rel)
    config, warnings = parse_task_toml((root / "task.toml").read_text(encoding="utf-8"), root)
    return Task(root, config, tuple(warnings))


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
