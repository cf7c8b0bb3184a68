"""A run's start removes what a dead run left behind and says so; a pool whose owner lives
(another run, or a supervisor started with `cleanroom envs up`) stays. Fake pool records
in a temporary pool root; Docker and the machine's users are kept out."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from rich.console import Console

from cleanroom.environments.pool import orphans
from cleanroom.environments.pool.pool_record import PoolRecord, read_record, write_record
from cleanroom.harness import loop
from cleanroom.harness.loop import remove_dead_runs

NO_SUCH_PID = 2**22 + 1  # above the kernel's pid_max: never a live process


def _pool(tmp_path: Path, pool_id: str, owner_pid: int | None) -> PoolRecord:
    root = tmp_path / "pools" / pool_id
    (root / "homes").mkdir(parents=True)
    run_dir = tmp_path / "runs" / pool_id
    run_dir.mkdir(parents=True)
    (run_dir / "pool.json").write_text(json.dumps({"state": "ready", "pool_id": pool_id}))
    record = PoolRecord.for_this_process(
        pool_id, root, run_dir, [], containers=False, harness_authority=None
    )
    if owner_pid is not None:  # a dead owner: a pid no process has
        record = PoolRecord(pool_id, root, run_dir, owner_pid, None, ())
    write_record(record, tmp_path / "records")
    return record


@pytest.fixture(autouse=True)
def this_machine_kept_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the fake records are looked at: no Docker, no real pool users."""
    monkeypatch.setattr(orphans, "_docker_or_none", lambda: None)
    monkeypatch.setattr(orphans, "_unrecorded_users", lambda _recorded: {})


def test_a_run_start_removes_a_dead_runs_pool_and_says_so(tmp_path: Path) -> None:
    dead = _pool(tmp_path, "d0d0d0", owner_pid=NO_SUCH_PID)
    steps: list[str] = []
    events: list[str] = []
    remove_dead_runs(steps.append, events.append, tmp_path / "pools", tmp_path / "records")
    assert not dead.root.exists(), "the dead run's pool folder is still there"
    assert read_record("d0d0d0", tmp_path / "records") is None
    state = json.loads((dead.run_dir / "pool.json").read_text())
    assert state["state"] == "stopped" and state["removed_after_crash"]
    assert steps == ["removing what dead runs left behind"]
    assert [e for e in events if "pool d0d0d0: removed" in e and "1 folder(s)" in e], events


def test_a_pool_whose_owner_lives_stays(tmp_path: Path) -> None:
    live = _pool(tmp_path, "a1a1a1", owner_pid=None)  # owned by this (running) process
    events: list[str] = []
    remove_dead_runs(lambda _s: None, events.append, tmp_path / "pools", tmp_path / "records")
    assert live.root.exists()
    assert read_record("a1a1a1", tmp_path / "records") == live
    assert json.loads((live.run_dir / "pool.json").read_text())["state"] == "ready"
    assert events == []


class _ServerNotStarted(Exception):
    """Ends the run's start right after the clean-up, before anything real starts."""


def test_every_run_cleans_up_before_it_starts_anything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    order: list[str] = []

    def cleaned(_step: Callable[[str], None], _event: Callable[[str], None], root: Path) -> None:
        order.append(f"clean-up under {root}")

    def server_start(*_args: Any, **_kwargs: Any) -> None:
        order.append("verify server")
        raise _ServerNotStarted

    monkeypatch.setattr(loop, "remove_dead_runs", cleaned)
    monkeypatch.setattr(loop.VerifyServerProcess, "start", server_start)
    progress = SimpleNamespace(step=lambda _text: None, event=lambda _text: None)
    config = loop.LoopConfig(run_dir=tmp_path / "run", pool_root=tmp_path / "pools")
    with pytest.raises(_ServerNotStarted):
        loop.start_services(
            config,
            SimpleNamespace(run_dir=tmp_path / "run"),
            ExitStack(),
            progress,
            Console(),
            threading.Event(),
        )
    assert order == [f"clean-up under {tmp_path / 'pools'}", "verify server"]
