"""`cleanroom demo` runs the main job end to end on real parts and records it all."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cleanroom.core.isolation import RowResult
from cleanroom.core.outcomes import Reason, Status
from cleanroom.harness.form_audit_rows import AUDIT_TEST
from cleanroom.store.rundb import RunStore

CLI = Path(sys.executable).with_name("cleanroom")


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_demo_runs_every_piece_and_records_every_outcome(
    demo_run: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    run, proc = demo_run
    out = proc.stdout
    assert proc.returncode == 0, out[-6000:] + proc.stderr[-3000:]
    assert "validation: valid" in out
    # A number is printed only next to a control that fired; otherwise the refusal says why.
    if "Isolation number refused:" not in out:
        assert "Isolation: " in out
        assert "): fired" in out
        assert "at 0.1x the planned trials" in out
    assert "not proven in this run" not in out
    assert f"HTML report: {run / 'report.html'}" in out.replace("\n", "")

    with RunStore.open(run) as store:
        assert store.run_info()["status"] == "finished"
        assert store.run_info()["meta"]["machine"]["kernel"].startswith("Linux")
        rollouts = store.rollouts()
        assert all(r.finished for r in rollouts)
        before = {(r.env, r.task): r for r in rollouts if r.window == 0}
        # The audit's control: the planted leak invalidates both ends; idle is a failure.
        assert before["env01", "form:planted-leak"].reason is Reason.ISOLATION
        assert before["env02", "form:planted-leak"].reason is Reason.ISOLATION
        assert before["env03", "form:planted-leak"].outcome is Status.FAILURE
        assert before["env01", "osworld:rename"].outcome is Status.SUCCESS
        assert before["env03", "osworld:rename"].outcome is Status.FAILURE
        # The verifier's own verdict is kept beside the isolation verdict.
        [honest] = store.verifier_results(before["env01", "form:planted-leak"].rollout_id)
        assert honest.outcome.status is Status.SUCCESS
        leaky = {(c.test, c.leak): c for c in store.leaky_controls()}
        assert any(t == AUDIT_TEST and c.fired for (t, _), c in leaky.items())
        assert leaky["channels", "open-host"].fired
        assert leaky["token_sweep", "shared-home"].fired
        sweep_cells = [
            c for (t, k), c in leaky.items() if t == "token_sweep" and k != "shared-home"
        ]
        assert len(sweep_cells) == 1 and sweep_cells[0].fired, sweep_cells  # its planted file
        canary_cells = [c for (t, _), c in leaky.items() if t == "canaries"]
        assert len(canary_cells) == 2 and all(c.fired for c in canary_cells), canary_cells
        [console_cell] = [c for (t, _), c in leaky.items() if t == "parked_console"]
        assert console_cell.fired, console_cell
        assert store.watches()["parked_console"].active

        # The window: a smoke rollout on every acting environment, every test, the canary.
        window = [r for r in rollouts if r.window == 1]
        assert {r.env for r in window} == {"env01", "env02", "env03"}
        rows = store.isolation_rows(1)
        tests = {r.test for r in rows}
        assert {
            "canaries", "parked_console", AUDIT_TEST, "clipboard", "stale_generation", "token_sweep"
        } <= tests  # fmt: skip
        # Every check the window counted was proven in this run by a control that fired.
        fired = {t for (t, _), c in leaky.items() if c.fired}
        assert tests <= fired, tests - fired
        # The planted leak is a control: it never becomes a row of the published number.
        assert not [r for r in store.isolation_rows() if r.window == 0]
        assert store.window_status(1) in ("closed", "failed")
        if store.window_status(1) == "failed":
            assert any(r.result is RowResult.LOST for r in rows) or any(
                r.test in ("canaries", "parked_console", "token_sweep")
                and r.result is RowResult.CROSS
                for r in rows
            )

    matrix = json.loads((run / "redteam.json").read_text())
    assert matrix["verdict"]["line"]
    assert "red-team matrix" in (run / "report.html").read_text()


def test_the_demo_refuses_a_run_folder_that_is_not_empty(tmp_path: Path) -> None:
    (tmp_path / "something").write_text("x")
    proc = subprocess.run(
        [str(CLI), "demo", "--run", str(tmp_path)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2
    assert "not empty" in proc.stderr
