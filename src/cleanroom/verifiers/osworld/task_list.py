"""A list of OSWorld tasks as a user names it: OSWorld's index, task files or folders.

OSWorld's index (``test_all.json``) maps each domain to task ids, and the task files sit
beside it at ``examples/<domain>/<id>.json``. A folder stands for every ``*.json`` under
it (indexes among them left out); any other file is a task file.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cleanroom.verifiers.osworld.task import Task, TaskFileError, find_task_files, load_task


@dataclass(frozen=True)
class TaskList:
    """The tasks that loaded, in order, and what could not be loaded."""

    tasks: tuple[Task, ...]
    errors: tuple[TaskFileError, ...]


def is_task_index(data: Any) -> bool:
    """Whether decoded JSON has the shape of OSWorld's index: domains to lists of ids."""
    return (
        isinstance(data, dict)
        and bool(data)
        and all(
            isinstance(ids, list) and all(isinstance(i, str) for i in ids) for ids in data.values()
        )
    )


def index_task_files(index: Path, data: dict[str, list[str]]) -> list[Path]:
    """The task files an index names, where OSWorld keeps them: ``examples/<domain>/<id>.json``
    beside the index. A domain or id that is not a plain name is refused."""
    files = []
    for domain, ids in data.items():
        for task_id in ids:
            for name in (domain, task_id):
                if name in ("", ".", "..") or "/" in name or os.sep in name or "\0" in name:
                    raise TaskFileError(index, f"{name!r} is not a domain or task id")
            files.append(index.parent / "examples" / domain / f"{task_id}.json")
    return files


def task_index(path: Path) -> dict[str, list[str]] | None:
    """The index in ``path``, or None when ``path`` is a folder or another JSON file."""
    if path.is_dir():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None  # load_task names what is wrong with it
    if isinstance(data, dict) and "evaluator" in data:
        return None
    return data if is_task_index(data) else None


def read_task_list(paths: list[Path]) -> TaskList:
    """Every task the paths name, loaded; a file that is missing or malformed is an error
    in the list, not an exception, so one broken task does not hide the others."""
    files: list[Path] = []
    errors: list[TaskFileError] = []
    for path in paths:
        index = task_index(path)
        if index is None:
            # A folder may hold OSWorld's indexes beside the examples: they are no tasks.
            found = find_task_files([path])
            files += [f for f in found if not path.is_dir() or task_index(f) is None]
            continue
        try:
            files += index_task_files(path, index)
        except TaskFileError as exc:
            errors.append(exc)
    tasks: list[Task] = []
    for file in files:
        try:
            tasks.append(load_task(file))
        except TaskFileError as exc:
            errors.append(exc)
    return TaskList(tuple(tasks), tuple(errors))
