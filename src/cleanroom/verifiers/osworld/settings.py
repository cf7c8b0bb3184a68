"""The knobs of one checker run, with OSWorld's defaults."""

from __future__ import annotations

from dataclasses import dataclass

from cleanroom.verifiers.osworld.download import TASK_FILE_CAP_BYTES
from cleanroom.verifiers.osworld.mirror import Mirror


@dataclass(frozen=True)
class CheckSettings:
    """What a run of setup steps and getters needs to know besides the task.

    ``client_password`` and the screen size fill the placeholders of setup commands.
    ``getter_timeout`` and ``step_timeout`` are OSWorld's 120 s server limit by default.
    ``cache_root`` holds one folder per task, cleared before each run; None means a new
    temporary folder per run, so parallel runs of the same task never share files.
    ``mirror`` is where ``download`` steps and ``cloud_file`` getters fetch OSWorld's
    dataset files from instead of the dataset (`mirror.resolve`); None fetches each URL
    itself. ``file_cap_bytes`` bounds every file fetched or read from a mirror.
    """

    client_password: str = "password"
    screen_width: int = 1920
    screen_height: int = 1080
    getter_timeout: float = 120.0
    step_timeout: float = 120.0
    download_timeout: float = 120.0
    until_timeout: float = 60.0
    cache_root: str | None = None
    mirror: Mirror | None = None
    file_cap_bytes: int = TASK_FILE_CAP_BYTES
