"""Fixtures for the container verifier's integration tests: a real daemon, nothing faked.

Every container and image these tests create carries this session's labels and is
removed by label at the end. A missing daemon or base image fails the tests with what
to do about it; nothing is skipped.
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from cleanroom.verifiers.container.docker_runtime import DockerRuntime, RuntimeUnavailable
from cleanroom.verifiers.container.task import Task, load_task

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "tasks"
BASE_IMAGE = "cleanroom/base:bookworm"


@pytest.fixture(scope="session")
def runtime() -> Iterator[DockerRuntime]:
    """A runtime on the real daemon whose every container and image is labelled for cleanup."""
    labels = {"cleanroom.test": "1", "cleanroom.session": uuid.uuid4().hex[:12]}
    try:
        rt = DockerRuntime.connect(labels)
    except RuntimeUnavailable as exc:
        pytest.fail(f"these tests need a running Docker daemon ({exc}); run `make setup`")
    try:
        rt.docker.client.images.get(BASE_IMAGE)
    except Exception as exc:  # any failure here has the same fix
        pytest.fail(f"the base image {BASE_IMAGE} is missing ({exc}); run `make setup`")
    yield rt
    rt.remove_labelled(labels)


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
