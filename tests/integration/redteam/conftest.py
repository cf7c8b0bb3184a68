"""The red-team matrix, run once per session on the real daemon and shared by the tests.

Every attack in the catalogue runs against its target task under every mode (with the
honest solution and the no-op agent as reference rows). `cleanroom demo` runs exactly that
matrix as one of its steps, so the tests judge the demo's own run of it (``demo_run``, in
the integration tests' shared conftest, run once per session) rather than running it a
second time. The parametrized tests then each check one cell.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from cleanroom.redteam.matrix import Matrix
from cleanroom.reports.redteam_section import REDTEAM_FILE


@pytest.fixture(scope="session")
def matrix(demo_run: tuple[Path, subprocess.CompletedProcess[str]]) -> Matrix:
    """The whole targeted matrix, as the demo ran and stored it."""
    run, proc = demo_run
    stored = run / REDTEAM_FILE
    if not stored.exists():
        pytest.fail(
            f"the demo stored no red-team matrix:\n{proc.stdout[-3000:]}{proc.stderr[-2000:]}"
        )
    return Matrix.from_json(json.loads(stored.read_text()))
