"""The red-team matrix, run once per session on the real daemon and shared by the tests.

Every attack in the catalogue runs against its target task under every mode (with the
honest solution and the no-op agent as reference rows), three rollouts at a time. The
parametrized tests then each check one cell. A missing daemon fails, never skips.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from cleanroom.redteam.catalogue import ATTACKS
from cleanroom.redteam.matrix import Matrix
from cleanroom.redteam.run_matrix import example_tasks, plan_rows, run_matrix
from cleanroom.verifiers.container.docker_runtime import DockerRuntime, RuntimeUnavailable

JOBS = 3


@pytest.fixture(scope="session")
def redteam_runtime() -> Iterator[DockerRuntime]:
    """A runtime on the real daemon whose containers and images are removed by label."""
    labels = {"cleanroom.test": "1", "cleanroom.session": uuid.uuid4().hex[:12]}
    try:
        rt = DockerRuntime.connect(labels)
    except RuntimeUnavailable as exc:
        pytest.fail(f"the red-team tests need a running Docker daemon ({exc}); run `make setup`")
    yield rt
    rt.remove_labelled(labels)


@pytest.fixture(scope="session")
def matrix(redteam_runtime: DockerRuntime) -> Matrix:
    """The whole targeted matrix, run once."""
    tasks = example_tasks()
    rows = plan_rows(tasks, ATTACKS, targeted=True)
    return run_matrix(tasks, rows, redteam_runtime, jobs=JOBS)
