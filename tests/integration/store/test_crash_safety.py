"""A harness killed with SIGKILL loses no committed row, and its unfinished rollouts
become invalid (interrupted) when the run is opened again."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from cleanroom.core.outcomes import Reason, Status
from cleanroom.store.rundb import RunStore

HARNESS = textwrap.dedent(
    """
    import sys, time
    from cleanroom.core.isolation import IsolationRow, RowResult
    from cleanroom.core.outcomes import Outcome
    from cleanroom.core.tokens import mint
    from cleanroom.store.rundb import RunStore

    store = RunStore.create(sys.argv[1])
    store.open_window(1)
    i = 0
    while True:
        token = mint(f"env{i % 3 + 1:02d}-w001-r{i:04d}")
        store.start_rollout(token, task="writer")
        row = IsolationRow("clipboard", i, "env01", "env02", RowResult.CLEAN, 1)
        store.add_isolation_rows([row])
        if i % 2 == 0:
            store.finish_rollout(token.rollout_id, Outcome.success())
            print("finished", token.rollout_id, flush=True)
        else:
            print("started", token.rollout_id, flush=True)
        i += 1
    """
)


def test_sigkill_mid_run_loses_no_committed_row_and_marks_unfinished_rollouts(
    tmp_path: Path,
) -> None:
    run = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-c", HARNESS, str(run)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    reported: list[tuple[str, str]] = []
    for line in proc.stdout:
        kind, rollout_id = line.split()
        reported.append((kind, rollout_id))
        if len(reported) >= 400:
            break
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL

    with RunStore.open(run) as store:
        by_id = {r.rollout_id: r for r in store.rollouts()}
        for kind, rollout_id in reported:
            row = by_id[rollout_id]  # every committed row is there
            if kind == "finished":
                assert row.outcome is Status.SUCCESS
            else:
                assert (row.outcome, row.reason) == (Status.INVALID, Reason.INTERRUPTED)
        assert all(r.finished for r in by_id.values())
        assert set(store.recovered) >= {rid for kind, rid in reported if kind == "started"}
        assert len(store.isolation_rows()) >= len(reported)
        assert store.run_info()["status"] == "interrupted"
        assert store.window_status(1) == "interrupted"
