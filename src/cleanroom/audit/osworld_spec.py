"""What the audit needs to know of an OSWorld task besides its file: ``TASK.audit.toml``.

An OSWorld task file names no oracle, so the audit reads one from a TOML file beside it
(``e0df059f-....audit.toml`` for ``e0df059f-....json``)::

    oracle = "mv ~/Desktop/todo_list_Jan_1 ~/Desktop/todo_list_Jan_2"
    guest = "local"            # where the checker runs, as `cleanroom osworld` names it

    [[near_miss]]              # optional: known-wrong actions the checker must fail
    action = "cp -r ~/Desktop/todo_list_Jan_1 ~/Desktop/todo_list_Jan_2"
    why = "copies the folder instead of renaming it"
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path


class SpecError(ValueError):
    """The audit file of an OSWorld task is missing or malformed; the message names it."""


@dataclass(frozen=True)
class NearMiss:
    action: str
    why: str


@dataclass(frozen=True)
class OsworldSpec:
    oracle: str
    guest: str = "local"
    near_misses: tuple[NearMiss, ...] = ()


def spec_path(task_file: Path) -> Path:
    return task_file.with_name(task_file.stem + ".audit.toml")


def load_spec(task_file: Path) -> OsworldSpec:
    """The oracle, guest and near misses for ``task_file``; `SpecError` naming the file."""
    path = spec_path(task_file)
    if not path.is_file():
        raise SpecError(f"{path}: missing; an OSWorld task is audited with its oracle from there")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise SpecError(f"{path}: {exc}") from exc
    unknown = set(data) - {"oracle", "guest", "near_miss"}
    if unknown:
        raise SpecError(f"{path}: unknown key {sorted(unknown)[0]!r}")
    oracle = data.get("oracle")
    guest = data.get("guest", "local")
    if not isinstance(oracle, str) or not oracle.strip():
        raise SpecError(f"{path}: needs oracle = a shell command that solves the task")
    if not isinstance(guest, str):
        raise SpecError(f"{path}: guest must be a string such as 'local'")
    misses: list[NearMiss] = []
    for n, entry in enumerate(data.get("near_miss", []), start=1):
        if (
            not isinstance(entry, dict)
            or set(entry) != {"action", "why"}
            or not all(isinstance(v, str) and v.strip() for v in entry.values())
        ):
            raise SpecError(f"{path}: near_miss {n} needs exactly action and why (strings)")
        misses.append(NearMiss(entry["action"], entry["why"]))
    return OsworldSpec(oracle, guest, tuple(misses))
