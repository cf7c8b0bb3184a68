"""An audit killed mid-run resumes from its database: done jobs are skipped, the job that
was running is interrupted and runs again, and what it left on the daemon is removed."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
from pathlib import Path

import pytest

from cleanroom.audit.job import JOB_LABEL
from cleanroom.lifecycle import wait_until
from cleanroom.verifiers.container.runtime.docker import DockerRuntime

from .conftest import CLEANROOM, QUICK, TASKS, run_audit

pytestmark = pytest.mark.docker


def statuses(run_dir: Path) -> dict[str, str]:
    db = run_dir / "audit.sqlite"
    if not db.exists():
        return {}
    try:
        with sqlite3.connect(db) as conn:
            return dict(conn.execute("SELECT name, status FROM audit_jobs").fetchall())
    except sqlite3.OperationalError:  # the audit has not made its tables yet
        return {}


def test_a_killed_audit_resumes_with_only_the_unfinished_job(
    tmp_path: Path, runtime: DockerRuntime
) -> None:
    run_dir = tmp_path / "run"
    tasks = [str(TASKS / "build-fails"), str(TASKS / "good")]
    args = [*tasks, *QUICK, "--workers", "1", "--json"]
    # Given an audit, one job at a time, killed while its second job runs ...
    audit = subprocess.Popen(
        [str(CLEANROOM), "audit", *args, "--run-dir", str(run_dir)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        second = wait_until(
            lambda: statuses(run_dir) == {"build-fails": "done", "good": "running"}, 120
        )
        assert second, statuses(run_dir)
        wait_until(lambda: runtime.docker.containers_labelled(JOB_LABEL) or None, 30)
        audit.send_signal(signal.SIGKILL)
        audit.wait(30)
    finally:
        if audit.poll() is None:
            audit.kill()
            audit.wait()
    # ... when it is run again on the same folder ...
    again = run_audit(*args, run_dir=run_dir, timeout=300)
    # ... then only the interrupted job ran again, and the audit completed.
    assert again.proc.returncode == 1, again.proc.stderr[-2000:]
    assert again.task("build-fails")["attempts"] == 1
    assert again.task("good")["attempts"] == 2
    assert again.task("good")["verdict"] == "clean"
    left = runtime.docker.containers_labelled(f"{JOB_LABEL}={again.task('good')['job_id']}")
    assert left == []
