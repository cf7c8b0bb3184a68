"""`cleanroom demo` runs the main job end to end on real parts and records it all."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from cleanroom.core.isolation import RowResult
from cleanroom.core.outcomes import Reason, Status
from cleanroom.store.rundb import RunStore

CLI = Path(sys.executable).with_name("cleanroom")


def test_the_demo_runs_every_piece_and_records_every_outcome(tmp_path: Path) -> None:
    run = tmp_path / "run"
    proc = subprocess.run(
        [str(CLI), "demo", "--run", str(run)], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "validation: valid" in proc.stdout
    assert "refused" in proc.stdout  # no positive control has run: no number is printed

    with RunStore.open(run) as store:
        assert store.run_info()["status"] == "finished"
        by_task = {(r.env, r.task): r for r in store.rollouts()}
        # The planted leak invalidates both ends; the idle rollout is a valid failure.
        assert by_task["env01", "form"].reason is Reason.ISOLATION
        assert by_task["env02", "form"].reason is Reason.ISOLATION
        assert by_task["env03", "form"].outcome is Status.FAILURE
        assert by_task["env01", "osworld:rename"].outcome is Status.SUCCESS
        assert by_task["env03", "osworld:rename"].outcome is Status.FAILURE
        cross = [r for r in store.isolation_rows() if r.result is RowResult.CROSS]
        assert [(r.from_env, r.to_env) for r in cross] == [("env02", "env01")]
        # The verifier's own verdict is kept beside the isolation verdict.
        [honest] = store.verifier_results(by_task["env01", "form"].rollout_id)
        assert honest.outcome.status is Status.SUCCESS


def test_the_demo_refuses_a_run_folder_that_is_not_empty(tmp_path: Path) -> None:
    (tmp_path / "something").write_text("x")
    proc = subprocess.run(
        [str(CLI), "demo", "--run", str(tmp_path)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2
    assert "not empty" in proc.stderr
