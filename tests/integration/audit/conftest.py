"""Running ``cleanroom audit`` as a real subprocess on the real Docker daemon."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[3]
CLEANROOM = REPO / ".venv" / "bin" / "cleanroom"
TASKS = Path(__file__).with_name("tasks")
OSWORLD = Path(__file__).with_name("osworld")
EXAMPLES = REPO / "examples" / "tasks"
RENAME_TASK = REPO / "tests/data/osworld/tasks/os/e0df059f-28a6-4169-924f-b9623e7184cc.json"
# Small settings for the tests: enough repeats to compare, the planted-reward probe.
QUICK = ("--repeats", "2", "--probe", "planted-reward-txt")


@dataclass(frozen=True)
class AuditRun:
    proc: subprocess.CompletedProcess[str]
    run_dir: Path

    @property
    def data(self) -> dict[str, Any]:
        return json.loads(self.proc.stdout)

    def task(self, name: str) -> dict[str, Any]:
        (found,) = [t for t in self.data["tasks"] if t["name"] == name]
        return found


def run_audit(*args: str, run_dir: Path, timeout: float = 600) -> AuditRun:
    """``cleanroom audit ARGS --run-dir RUN_DIR``; a wide terminal so rows are not cut."""
    proc = subprocess.run(
        [str(CLEANROOM), "audit", *args, "--run-dir", str(run_dir)],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env={**os.environ, "COLUMNS": "200"},
    )
    return AuditRun(proc, run_dir)


@pytest.fixture()
def audit_cli() -> Callable[..., AuditRun]:
    return run_audit
