"""One task model where Harbor is installed (needs ``cleanroom[harbor]``).

Inside Harbor (`harbor.SealedVerifier`, `environment.verify_environment_async` and the
loops built on it) a task folder is read the way Harbor reads it: Harbor's own ``Task``
validates the folder and ``task.toml`` with Harbor's own ``TaskConfig``, and cleanroom's
`TaskConfig` is made from Harbor's parsed values (`config_from_harbor`), never from a
second reading of the file under other rules. What Harbor refuses is refused, whatever
cleanroom's own model would say; cleanroom then refuses, by name, what it cannot run.

Harbor's models ignore keys they do not declare. Those keys are not Harbor's to judge:
cleanroom's own keys (under ``[metadata.cleanroom]``, which Harbor keeps as data, or in
the sections themselves) and keys neither knows. They are taken from the file's table as
it was written and handed to cleanroom's model beside Harbor's values, so that cleanroom
reads its own keys and warns about unknown ones as it does without Harbor.

Without Harbor (the core, its CLI) cleanroom's own model reads the file
(`verifiers.container.task.load_task`); docs/harbor.md lists where the two disagree.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from cleanroom.core.errors import ExtraNotInstalledError

try:
    from harbor.models.task.config import EnvironmentConfig as HarborEnvironmentConfig
    from harbor.models.task.config import TaskConfig as HarborTaskConfig
    from harbor.models.task.task import Task as HarborTask
except ImportError as exc:  # imported only by a caller that has Harbor
    raise ExtraNotInstalledError(
        "reading a task with Harbor's model", "harbor", exc.name or "harbor"
    ) from exc

from cleanroom.verifiers.container.task import (
    Task,
    TaskConfig,
    TaskConfigError,
    TaskError,
    TaskWarning,
    task_config_of,
    task_of,
)
from cleanroom.verifiers.container.task.loading import invalid_value, not_toml

# Keys Harbor's models read and then move under another name (``version`` is
# ``schema_version``, ``memory`` and ``storage`` are ``memory_mb`` and ``storage_mb``):
# Harbor's values carry them, so they are not keys it ignored.
_MIGRATED: dict[type[BaseModel], frozenset[str]] = {
    HarborTaskConfig: frozenset({"version"}),
    HarborEnvironmentConfig: frozenset({"memory", "storage"}),
}

__all__ = ["config_from_harbor", "load_harbor_task"]


def load_harbor_task(task_dir: str | os.PathLike[str]) -> tuple[HarborTask, Task]:
    """The task in ``task_dir`` as Harbor loads it, and as cleanroom reads it: Harbor's
    ``Task`` (its model and its layout checks), and cleanroom's `Task` whose config is
    mapped from Harbor's (`config_from_harbor`). A folder either refuses is a `TaskError`
    naming the file and, where it can, the line."""
    root = Path(task_dir).resolve()
    path = root / "task.toml"
    try:
        harbor_task = HarborTask(root)
    except tomllib.TOMLDecodeError as exc:  # a ValueError: caught before the others
        raise not_toml(exc, root) from exc
    except ValidationError as exc:
        raise invalid_value(exc, _text_of(path), path) from exc
    except (OSError, ValueError, RuntimeError) as exc:  # Harbor's layout checks
        raise TaskError(f"{root}: Harbor refuses the task folder: {exc}") from exc
    config, warnings = config_from_harbor(harbor_task.config, _text_of(path), root)
    return harbor_task, task_of(root, config, warnings)


def config_from_harbor(
    config: HarborTaskConfig, text: str, task_dir: Path
) -> tuple[TaskConfig, list[TaskWarning]]:
    """cleanroom's `TaskConfig` of a ``task.toml`` (``text``) that Harbor's model parsed
    into ``config``: Harbor's values (those the file set, after Harbor's migrations),
    with the keys Harbor's model ignored added back from the file's table for cleanroom
    to read or warn about. cleanroom's refusals apply (`task_config_of`)."""
    try:
        table = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise not_toml(exc, task_dir) from exc
    values = config.model_dump(mode="json", exclude_unset=True)
    return task_config_of(_with_ignored(values, table, config), text, task_dir)


def _with_ignored(
    values: dict[str, Any], table: dict[str, Any], model: BaseModel
) -> dict[str, Any]:
    """``values`` (``model``'s dump) with every key of ``table`` that ``model`` does not
    declare, at every depth of Harbor's nested models and lists of them."""
    fields = type(model).model_fields
    skip = _MIGRATED.get(type(model), frozenset())
    merged = dict(values)
    for key, written in table.items():
        if key not in fields:
            if key not in skip:
                merged[key] = written
            continue
        parsed = getattr(model, key)
        if isinstance(parsed, BaseModel) and isinstance(written, dict) and key in merged:
            merged[key] = _with_ignored(merged[key], written, parsed)
        elif isinstance(parsed, list) and isinstance(written, list) and key in merged:
            merged[key] = [
                _with_ignored(dumped, raw, item)
                if isinstance(item, BaseModel) and isinstance(raw, dict)
                else dumped
                for dumped, raw, item in zip(merged[key], written, parsed, strict=False)
            ]
    return merged


def _text_of(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TaskConfigError(path, None, f"cannot be read: {exc}") from exc
