"""Each task folder named on the command line, read by Harbor's own loader and by
cleanroom's Harbor-side loader (`integrations.harbor_task`), run in .venv-harbor's Python
by test_task_models.py. One JSON line a folder:

- ``harbor``: null when Harbor's ``Task`` accepts the folder, else its error;
- ``mapped``: cleanroom's reading where Harbor is installed, ``{"config": ...,
  "warnings": [...]}`` (the config as `effective` shows it) or ``{"error": ...}``;
- ``harbor_warnings``: what Python's warnings said while Harbor loaded the folder;
- ``inspect_harbor_warnings``: what inspect-harbor's task model logged reading its
  ``task.toml``;
- ``outcome``: for a folder the Harbor-side loader refuses, the outcome
  `verify_environment_async` gives it (with an environment that is never reached).

Nothing here needs pytest or a container: the test in .venv compares these lines with
what cleanroom's own model makes of the same folders.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import warnings
from pathlib import Path
from typing import Any

from cleanroom.verifiers.container.task import EnvironmentConfig, TaskConfig


def effective(config: TaskConfig) -> dict[str, Any]:
    """``config`` as it acts, beside the names it was written with: Harbor moves
    ``version``, ``memory``, ``storage`` and ``allow_internet`` to their newer names, while
    cleanroom's own model keeps them and reads both, so the two are compared by what
    they mean (the schema version, the memory limit, the disk size, the network)."""
    data = config.model_dump(mode="json")
    data["schema_version"] = config.schema_version or config.version
    del data["version"]
    _effective_environment(data["environment"], config.environment)
    if config.verifier.environment is not None:
        _effective_environment(data["verifier"]["environment"], config.verifier.environment)
    data["agent_network"] = config.agent_network
    data["verifier_network"] = config.verifier_network
    return data


def _effective_environment(data: dict[str, Any], environment: EnvironmentConfig) -> None:
    data["memory_mb"] = environment.memory_limit_mb
    data["storage_mb"] = _megabytes(environment.storage_mb, environment.storage)
    data["network_public"] = environment.network_public
    for key in ("memory", "storage", "network", "network_mode", "allow_internet"):
        del data[key]


def _megabytes(number: Any, text: Any) -> Any:
    if number is not None or not isinstance(text, str):
        return number
    units = {"G": 1024, "M": 1, "K": 1 / 1024}
    return int(float(text[:-1]) * units[text[-1].upper()])


class _Unreached:
    """An environment of a type the generic path takes, which a refused task never
    reaches: anything but its name and OS fails the test."""

    os = "linux"
    session_id = "never-started"

    def type(self) -> str:
        return "stand-in"

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"a refused task reached the environment ({name})")


class _Recorded(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def read(folder: Path) -> dict[str, Any]:
    """The JSON line for ``folder`` (see the module's docstring)."""
    from harbor.models.task.task import Task as HarborTask
    from inspect_harbor._harbor.models import TaskConfig as InspectHarborConfig

    from cleanroom.integrations.environment import verify_environment_async
    from cleanroom.integrations.harbor_task import load_harbor_task
    from cleanroom.verifiers.container.task import TaskError

    line: dict[str, Any] = {"harbor": None}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            HarborTask(folder)
        except Exception as exc:  # whatever Harbor's loader raises is its verdict
            line["harbor"] = f"{type(exc).__name__}: {exc}"
    line["harbor_warnings"] = [str(w.message) for w in caught]
    try:
        _, task = load_harbor_task(folder)
        line["mapped"] = {
            "config": effective(task.config),
            "warnings": [str(w) for w in task.warnings],
        }
    except TaskError as exc:
        line["mapped"] = {"error": str(exc)}
        line["outcome"] = asyncio.run(verify_environment_async(folder, _Unreached())).to_json()
    recorded = _Recorded()
    logger = logging.getLogger("inspect_harbor")
    logger.addHandler(recorded)
    try:
        InspectHarborConfig.from_toml((folder / "task.toml").read_text(encoding="utf-8"))
    except Exception as exc:  # a file inspect-harbor cannot read warns about nothing
        recorded.messages.append(f"(not read: {type(exc).__name__})")
    finally:
        logger.removeHandler(recorded)
    line["inspect_harbor_warnings"] = recorded.messages
    return line


def main(argv: list[str]) -> int:
    for name in argv:
        print(json.dumps(read(Path(name)), default=str), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
