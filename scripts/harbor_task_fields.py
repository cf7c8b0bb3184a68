"""Regenerate tests/data/harbor/task-fields.json from an installed Harbor.

Run with the Python that has the pinned release installed (Harbor needs Python 3.12):

    python harbor_task_fields.py > tests/data/harbor/task-fields.json

Every field of Harbor's ``TaskConfig`` is listed by its dotted path in ``task.toml``,
nested configs included (``environment.healthcheck.retries``); a list of tables is
written ``steps[].agent.timeout_sec``. The tests read this file; they never import Harbor.
"""

from __future__ import annotations

import json
import sys
import types
import typing
from importlib.metadata import version
from typing import Any

from harbor.models.task import config as harbor_config
from harbor.models.task.config import TaskConfig
from pydantic import BaseModel

LEGACY_KEYS = ["version", "environment.memory", "environment.storage"]


def _models_in(annotation: Any) -> list[tuple[type[BaseModel], bool]]:
    """The pydantic models inside a field's type, and whether each sits in a list."""
    found: list[tuple[type[BaseModel], bool]] = []
    if isinstance(annotation, typing.ForwardRef):
        annotation = annotation.__forward_arg__
    if isinstance(annotation, str):  # a forward reference, named in Harbor's module
        annotation = getattr(harbor_config, annotation)
    origin = typing.get_origin(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [(annotation, False)]
    if origin in (list, tuple):
        for arg in typing.get_args(annotation):
            found += [(model, True) for model, _ in _models_in(arg)]
        return found
    if origin in (typing.Union, types.UnionType):
        for arg in typing.get_args(annotation):
            found += _models_in(arg)
    return found


def fields_of(model: type[BaseModel], prefix: str = "") -> list[dict[str, str]]:
    rows: list[dict[str, str]] = []
    for name, info in model.model_fields.items():
        path = f"{prefix}{name}"
        rows.append({"field": path, "type": repr(info.annotation).replace("typing.", "")})
        for inner, listed in _models_in(info.annotation):
            rows += fields_of(inner, f"{path}[]." if listed else f"{path}.")
    seen: set[str] = set()
    return [r for r in rows if not (r["field"] in seen or seen.add(r["field"]))]


def main() -> None:
    data = {
        "source": f"harbor=={version('harbor')}, harbor.models.task.config.TaskConfig",
        "licence": "Harbor is distributed under the Apache License 2.0; this file lists "
        "only the names and types of its task.toml fields.",
        "regenerate": "python scripts/harbor_task_fields.py > tests/data/harbor/task-fields.json",
        "fields": fields_of(TaskConfig),
        # Keys Harbor still reads but maps onto the fields above (its "before" validators:
        # TaskConfig.handle_version_rename, EnvironmentConfig._migrate_legacy_resource_fields).
        "legacy_keys": LEGACY_KEYS,
    }
    json.dump(data, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
