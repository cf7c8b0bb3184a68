"""OSWorld task files shipped with cleanroom (Apache-2.0, see NOTICE.md here)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

RENAME_TASK = "e0df059f-28a6-4169-924f-b9623e7184cc.json"


def bundled_task(name: str = RENAME_TASK) -> Path:
    """The path of a bundled task file (the rename-a-folder task by default)."""
    path = Path(str(resources.files(__package__).joinpath(name)))
    if not path.is_file():
        raise FileNotFoundError(f"no bundled OSWorld task named {name}")
    return path
