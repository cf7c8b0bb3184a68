"""Loading a task folder and parsing its ``task.toml``, with the line of a bad key."""

from __future__ import annotations

import contextlib
import copy
import os
import re
import tomllib
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ValidationError,
)

from cleanroom.verifiers.container.task.compose import load_compose
from cleanroom.verifiers.container.task.compose_model import (
    MAIN,
    ComposeError,
    ComposeProject,
)
from cleanroom.verifiers.container.task.errors import (
    TaskConfigError,
    TaskError,
    TaskLayoutError,
    TaskWarning,
    TemplateError,
)
from cleanroom.verifiers.container.task.folder import Task, TaskStep
from cleanroom.verifiers.container.task.task_config import StepConfig, TaskConfig
from cleanroom.verifiers.container.task.templating import resolve_env

_REQUIRED = ("task.toml", "instruction.md", "tests/test.sh")


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
    return task_of(root, config, warnings)


def task_of(root: Path, config: TaskConfig, warnings: list[TaskWarning]) -> Task:
    """The task in the folder ``root`` whose ``task.toml`` gave ``config``: the layout
    the config asks for is checked (`load_task` says what), and its compose file read.
    Whichever model parsed the file (cleanroom's own, or Harbor's mapped into cleanroom's
    where Harbor is installed), the folder is checked by this one function."""
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
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise not_toml(exc, task_dir) from exc
    return task_config_of(raw, text, task_dir)


def task_config_of(
    table: dict[str, Any], text: str, task_dir: Path
) -> tuple[TaskConfig, list[TaskWarning]]:
    """cleanroom's `TaskConfig` of ``table``, the values of ``task.toml`` (whose ``text``
    locates a bad key's line), and the warnings for the keys no model knows: cleanroom's
    own keys under ``[metadata.cleanroom]`` are read, and what cleanroom cannot run is
    refused (`TaskConfigError`, naming the key and its line)."""
    path = task_dir / "task.toml"
    table = copy.deepcopy(table)  # the caller's values stay as they were
    _lift_own_keys(table, text, path)
    try:
        config = TaskConfig.model_validate(table)
    except ValidationError as exc:
        raise invalid_value(exc, text, path) from exc
    return config, _unknown_key_warnings(config, text)


def not_toml(exc: tomllib.TOMLDecodeError, task_dir: Path) -> TaskConfigError:
    """The error for a ``task.toml`` that is not TOML, with its line."""
    line = _line_from_toml_error(str(exc))
    return TaskConfigError(task_dir / "task.toml", line, f"not valid TOML: {exc}")


def invalid_value(exc: ValidationError, text: str, path: Path) -> TaskConfigError:
    """The error for the first value a task model refused (cleanroom's or Harbor's, both
    pydantic's), naming its key and the line it is set on."""
    first = exc.errors()[0]
    loc = tuple(str(part) for part in first["loc"])
    key = ".".join(loc) or "task.toml"
    line = next((n for i in range(len(loc), 0, -1) if (n := _line_of_key(text, loc[:i]))), None)
    return TaskConfigError(path, line, f"{key}: {first['msg']}")


# cleanroom's own keys, which Harbor's model does not have. Under ``[metadata.cleanroom]``
# (``[metadata.cleanroom.verifier]``, ``[metadata.cleanroom.environment]``), where Harbor
# and the tools that read its tasks keep free-form data, nothing warns about them; in the
# sections themselves they are read too.
OWN_KEYS: dict[str, frozenset[str]] = {
    "verifier": frozenset(
        {
            "reward_path",
            "result_paths",
            "setup_commands",
            "live_processes",
            "state",
            "state_cap_mb",
        }
    ),
    "environment": frozenset({"network", "pids_limit"}),
}


def _lift_own_keys(raw: dict[str, Any], text: str, path: Path) -> None:
    """Move ``[metadata.cleanroom.<section>]`` keys into their sections of ``raw``."""
    metadata = raw.get("metadata")
    own = metadata.get("cleanroom") if isinstance(metadata, dict) else None
    if own is None:
        return
    where = ("metadata", "cleanroom")
    if not isinstance(own, dict):
        raise TaskConfigError(path, _line_of_key(text, where), "metadata.cleanroom: a table")
    for section, keys in own.items():
        at = (*where, str(section))
        allowed = OWN_KEYS.get(str(section))
        if allowed is None or not isinstance(keys, dict):
            raise TaskConfigError(
                path,
                _line_of_key(text, at) or _line_of_key(text, where),
                f"metadata.cleanroom.{section}: not a table cleanroom reads (it reads "
                f"{', '.join(f'metadata.cleanroom.{s}' for s in OWN_KEYS)})",
            )
        target = raw.setdefault(str(section), {})
        for key, value in keys.items():
            if key not in allowed:
                raise TaskConfigError(
                    path,
                    _line_of_key(text, (*at, str(key))) or _line_of_key(text, at),
                    f"metadata.cleanroom.{section}.{key}: not a key of cleanroom's own; "
                    f"its keys there: {', '.join(sorted(allowed))}",
                )
            if isinstance(target, dict) and key in target:
                raise TaskConfigError(
                    path,
                    _line_of_key(text, (*at, str(key))) or _line_of_key(text, at),
                    f"metadata.cleanroom.{section}.{key}: also set in [{section}]; set it once",
                )
            if isinstance(target, dict):
                target[key] = value


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
