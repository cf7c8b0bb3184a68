"""What a task folder that cannot be used raises, and what a kept key warns."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cleanroom.core.errors import CleanroomError


class TaskError(CleanroomError):
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


class TemplateError(TaskError):
    """A ``${VAR}`` template whose variable is unset on the host and has no default."""
