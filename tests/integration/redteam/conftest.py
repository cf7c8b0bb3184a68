"""The red-team matrix, run once per session on the real daemon and shared by the tests.

Every attack in the catalogue runs against its target task under every mode (with the
honest solution and the no-op agent as reference rows), three rollouts at a time. The
parametrized tests then each check one cell. A missing daemon fails, never skips
(``runtime``, in the integration tests' shared conftest).
"""

from __future__ import annotations

import pytest

from cleanroom.redteam.catalogue import ATTACKS
from cleanroom.redteam.matrix import Matrix
from cleanroom.redteam.run_matrix import example_tasks, plan_rows, run_matrix
from cleanroom.verifiers.container.docker_runtime import DockerRuntime

JOBS = 3


@pytest.fixture(scope="session")
def matrix(runtime: DockerRuntime) -> Matrix:
    """The whole targeted matrix, run once."""
    tasks = example_tasks()
    rows = plan_rows(tasks, ATTACKS, targeted=True)
    return run_matrix(tasks, rows, runtime, jobs=JOBS)
