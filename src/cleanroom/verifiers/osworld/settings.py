"""The knobs of one checker run, with OSWorld's defaults."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CheckSettings:
    """What a run of setup steps and getters needs to know besides the task.

    ``client_password`` and the screen size fill the placeholders of setup commands.
    ``getter_timeout`` and ``step_timeout`` are OSWorld's 120 s server limit by default.
    ``cache_root`` holds one folder per task, cleared before each run; None means a new
    temporary folder per run, so parallel runs of the same task never share files.
    """

    client_password: str = "password"
    screen_width: int = 1920
    screen_height: int = 1080
    getter_timeout: float = 120.0
    step_timeout: float = 120.0
    download_timeout: float = 120.0
    until_timeout: float = 60.0
    cache_root: str | None = None
