"""`cleanroom run` end to end on real parts, finished and interrupted by a signal."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from cleanroom.lifecycle import wait_until
from cleanroom.store.rundb import DB_NAME, RunStore

CLI = Path(sys.executable).with_name("cleanroom")


def _report(run: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CLI), "report", str(run), "--json"], capture_output=True, text=True, timeout=60
    )


def _leftovers(run: Path) -> list[str]:
    """Processes still running as one of the run's environment users."""
    with RunStore.open(run, owner=False) as store:
        users = [e.unix_user for e in store.environments() if e.unix_user]
    found = subprocess.run(
        ["ps", "-eo", "user:40,pid,comm", "--no-headers"], capture_output=True, text=True
    ).stdout
    return [line for line in found.splitlines() if line.split()[0] in users]


def _fired(control: dict[str, int]) -> bool:
    return control["typing_cross"] > 0 and control["clipboard_cross"] > 0


# The demo runs the same loop (a window, its checks, the report) in every `make test`;
# this `cleanroom run` of it is in `make test-integrations`.
@pytest.mark.integrations
@pytest.mark.slow
@pytest.mark.timeout(420)
def test_two_environments_and_one_window_give_a_run_the_report_reads(
    desktop_stack: None, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    proc = subprocess.run(
        [str(CLI), "run", "--envs", "2", "--windows", "1", "--tasks", "writer,form",
         "--tests", "clipboard", "--trials-scale", "0.1", "--no-leaky-controls",
         "--run", str(run)],
        capture_output=True, text=True, timeout=400,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert "window 1 closed" in proc.stdout or "window 1 failed" in proc.stdout

    with RunStore.open(run) as store:
        assert store.run_info()["status"] == "finished"
        assert store.run_info()["meta"]["machine"]["kernel"].startswith("Linux")
        assert [e.name for e in store.environments()] == ["env00", "env01", "env02"]
        rollouts = store.rollouts(1)
        assert {(r.env, r.task) for r in rollouts} == {("env01", "writer"), ("env02", "form")}
        assert all(r.finished for r in rollouts)
        # The control is stored, or it could not run and says why (then no number is shown).
        assert store.control_results() or list(run.glob("control-error-*.txt"))
        tests = {r.test for r in store.isolation_rows(1)}
        assert tests == {"canaries", "parked_console", "form_audit", "clipboard", "token_sweep"}
        assert store.watches()["parked_console"].active
        assert store.console_samples(1)
        # 50 x 0.1 planned clipboard trials, and one more after the batch's writer rollout.
        clipboard = {r.trial for r in store.isolation_rows(1) if r.test == "clipboard"}
        assert clipboard == set(range(6))
        assert store.canary_samples(1)

    report = _report(run)
    assert report.returncode in (0, 1), report.stderr
    data = json.loads(report.stdout)
    assert [w["index"] for w in data["windows"]] == [1]
    # Without its leaky controls no check is proven, so no number is printed.
    assert not data["isolation"]["published"]
    if not data["positive_control"]:
        assert "has not run" in data["isolation"]["reason"]
    elif _fired(data["positive_control"][-1]) and not any(w["failure"] for w in data["windows"]):
        assert "--no-leaky-controls" in data["isolation"]["reason"]
    assert (run / "report.html").is_file()
    assert _leftovers(run) == []


@pytest.mark.slow
@pytest.mark.timeout(420)
def test_sigint_during_a_window_leaves_a_consistent_run_and_nothing_running(
    desktop_stack: None, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    proc = subprocess.Popen(
        [str(CLI), "run", "--envs", "2", "--windows", "3", "--tasks", "writer",
         "--run", str(run)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:

        def running() -> bool:
            assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
            return _a_rollout_is_running(run)

        assert wait_until(running, 300, 0.5), "no rollout started within 300 s"
        with RunStore.open(run, owner=False) as looked:
            running_ids = {r.rollout_id for r in looked.rollouts() if not r.finished}
        os.kill(proc.pid, signal.SIGINT)
        out, _ = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, out[-4000:]
    assert "SIGINT" in out

    with RunStore.open(run) as store:  # as owner: the harness released the run
        assert store.run_info()["status"] == "interrupted"
        assert all(w.ended_at is not None for w in store.windows())
        assert store.window_status(1) == "interrupted"
        rollouts = store.rollouts()
        assert rollouts and all(r.finished for r in rollouts)
        # A rollout running at the signal ends interrupted, unless it finished in the
        # moment between the test's look and the harness's stop (a rollout of a few
        # seconds sometimes does): either way it is closed, with an outcome.
        at_signal = [r for r in rollouts if r.rollout_id in running_ids]
        assert at_signal and all(r.finished and r.outcome is not None for r in at_signal)

    report = _report(run)
    assert report.returncode == 1, report.stdout + report.stderr  # refused, not a zero
    assert "interrupted" in json.loads(report.stdout)["isolation"]["reason"]
    assert _leftovers(run) == []


def _a_rollout_is_running(run: Path) -> bool:
    if not (run / DB_NAME).exists():
        return False
    try:
        with RunStore.open(run, owner=False) as store:
            return any(not r.finished for r in store.rollouts())
    except Exception:  # the database is still being created
        return False


def test_an_unknown_isolation_test_is_refused_before_anything_starts(tmp_path: Path) -> None:
    run = tmp_path / "run"
    proc = subprocess.run(
        [str(CLI), "run", "--tests", "no_such_test", "--run", str(run)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 2
    assert "no isolation test named no_such_test" in proc.stderr
    assert "clipboard" in proc.stderr  # the known names are listed
    assert not run.exists()


def test_the_soak_needs_a_positive_number_of_hours(tmp_path: Path) -> None:
    proc = subprocess.run(
        [str(CLI), "soak", "--hours", "0", "--run", str(tmp_path / "run")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 2
    assert "--hours" in proc.stderr
