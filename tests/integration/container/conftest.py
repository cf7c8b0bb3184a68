"""Fixtures for the container verifier's integration tests: a real daemon, nothing faked.

The runtime (``runtime``, in the integration tests' shared conftest) labels every
container and image these tests create and removes them by label at the end. A missing
daemon or base image fails the tests with what to do about it; nothing is skipped.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from cleanroom.verifiers.container.task import Task, load_task

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "tasks"


@pytest.fixture(scope="session")
def example() -> Callable[[str], Task]:
    """Load an example task by name."""
    return lambda name: load_task(EXAMPLES / name)


@pytest.fixture
def variant(tmp_path: Path) -> Callable[..., Task]:
    """A copy of an example task with some files replaced: ``variant("fix-median", {...})``."""

    def make(name: str, files: dict[str, str], folder: str = "") -> Task:
        root = tmp_path / (folder or f"{name}-variant")
        shutil.copytree(EXAMPLES / name, root)
        for rel, text in files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            if path.suffix == ".sh":
                path.chmod(0o755)
        return load_task(root)

    return make
