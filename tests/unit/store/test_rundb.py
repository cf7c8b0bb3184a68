"""The run database: every record type round-trips, and the schema is versioned."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from cleanroom.core.canary import CanarySample, ConsoleSample
from cleanroom.core.isolation import IsolationRow, RowResult
from cleanroom.core.outcomes import Outcome, Reason, Status
from cleanroom.core.publish import ControlResult
from cleanroom.core.tokens import mint
from cleanroom.store.migrations import MIGRATIONS
from cleanroom.store.rundb import (
    LatencySample,
    LeakyControlResult,
    RunBusy,
    RunStore,
    RunStoreError,
    WatchRecord,
)


@pytest.fixture
def store(tmp_path: Path) -> RunStore:
    s = RunStore.create(tmp_path / "run", meta={"envs": 3})
    yield s
    s.close()


def test_a_new_run_is_in_wal_mode_at_the_latest_schema(store: RunStore) -> None:
    conn = sqlite3.connect(store.path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store.schema_version == len(MIGRATIONS)
    assert store.run_info()["meta"] == {"envs": 3}


def test_creating_over_an_existing_run_is_refused(store: RunStore) -> None:
    with pytest.raises(RunStoreError, match="already holds a run"):
        RunStore.create(store.run_dir)


def test_a_second_owner_is_refused_while_the_first_lives(store: RunStore) -> None:
    with pytest.raises(RunBusy):
        RunStore.open(store.run_dir)


def test_a_reader_can_open_beside_the_owner(store: RunStore) -> None:
    store.open_window(1)
    with RunStore.open(store.run_dir, owner=False) as reader:
        assert [w.index for w in reader.windows()] == [1]


def test_a_rollout_round_trips_with_token_outcome_reason_score_and_times(store: RunStore) -> None:
    token = mint("env02-w001-r0001")
    store.open_window(1)
    store.start_rollout(token, task="rename", started_at=100.0)
    store.finish_rollout(token.rollout_id, Outcome.invalid(Reason.CHECKER_ERROR, "timeout"), 105.0)
    [r] = store.rollouts()
    assert (r.rollout_id, r.env, r.window, r.token, r.task) == (
        "env02-w001-r0001",
        "env02",
        1,
        str(token),
        "rename",
    )
    assert (r.started_at, r.ended_at, r.outcome, r.reason, r.score, r.detail) == (
        100.0,
        105.0,
        Status.INVALID,
        Reason.CHECKER_ERROR,
        None,
        "timeout",
    )


def test_a_rollout_finishes_only_once(store: RunStore) -> None:
    token = mint("env02-w001-r0001")
    store.start_rollout(token, task="rename")
    store.finish_rollout(token.rollout_id, Outcome.success())
    with pytest.raises(RunStoreError, match="already finished"):
        store.finish_rollout(token.rollout_id, Outcome.failure())


def test_the_sticky_flag_invalidates_rollouts_that_ended_after_the_event(store: RunStore) -> None:
    early, late, flagged = (mint(f"env0{i}-w001-r0001") for i in (1, 2, 3))
    for t in (early, late, flagged):
        store.start_rollout(t, task="writer", started_at=0.0)
    store.finish_rollout(early.rollout_id, Outcome.success(), ended_at=10.0)
    store.finish_rollout(late.rollout_id, Outcome.success(), ended_at=30.0)
    store.finish_rollout(
        flagged.rollout_id, Outcome.invalid(Reason.VERIFIER_TIMEOUT), ended_at=40.0
    )

    changed = store.invalidate_rollouts(1, after=20.0, reason=Reason.ISOLATION, detail="canary")

    by_id = {r.rollout_id: r for r in store.rollouts()}
    assert changed == 1
    assert by_id[early.rollout_id].outcome is Status.SUCCESS
    assert (by_id[late.rollout_id].outcome, by_id[late.rollout_id].reason) == (
        Status.INVALID,
        Reason.ISOLATION,
    )
    assert by_id[flagged.rollout_id].reason is Reason.VERIFIER_TIMEOUT  # first reason kept


def test_isolation_rows_round_trip_in_order(store: RunStore) -> None:
    rows = [
        IsolationRow("clipboard", t, "env01", f"env0{t + 2}", RowResult.CLEAN, 1, f"t{t}")
        for t in range(3)
    ]
    rows.append(IsolationRow("keyboard_storm", 0, "env03", "env01", RowResult.LOST, 2, "no file"))
    assert store.add_isolation_rows(rows) == 4
    assert store.isolation_rows() == rows
    assert store.isolation_rows(window=2) == rows[3:]


def test_canary_samples_keep_lost_reads(store: RunStore) -> None:
    store.add_canary_sample(CanarySample(1.0, True, "a", "b", "c", window=1))
    store.add_canary_sample(CanarySample(3.0, False, window=1, detail="AT-SPI bus gone"))
    samples = store.canary_samples(window=1)
    assert [s.ok for s in samples] == [True, False]
    assert samples[1].detail == "AT-SPI bus gone"


def test_parked_console_samples_round_trip_with_lost_reads(store: RunStore) -> None:
    seen = ConsoleSample(1.0, True, "pane-hash", 3, window=1, sources=("env02",))
    store.add_console_sample(seen)
    store.add_console_sample(ConsoleSample(3.0, False, window=1, detail="unreadable: tmux"))
    back = store.console_samples(window=1)
    assert back[0] == seen and back[0].sources == ("env02",) and back[0].state == ("pane-hash", 3)
    assert not back[1].ok and back[1].detail == "unreadable: tmux"
    assert store.canary_samples() == []  # a watch of its own, not env00's samples


def test_a_watch_records_whether_it_was_active_and_why_not(store: RunStore) -> None:
    assert store.watches() == {}
    store.set_watch(WatchRecord("parked_console", True))
    store.set_watch(WatchRecord("parked_console", False, "tmux: not found"))
    assert store.watches() == {
        "parked_console": WatchRecord("parked_console", False, "tmux: not found")
    }


def test_verifier_and_control_results_round_trip(store: RunStore) -> None:
    outcome = Outcome.failure(0.5, stdout="Directory exists.\n")
    store.add_verifier_result("env01-w001-r0001", "osworld", outcome)
    [v] = store.verifier_results("env01-w001-r0001")
    assert v.outcome == outcome and v.outcome.details == {"stdout": "Directory exists.\n"}
    control = ControlResult(3, 10, 0, 9, clipboard_skew_ms=(4.5, 120.0) + (2.0,) * 8)
    store.add_control_result(control)
    assert store.control_results() == [control]


def test_generations_only_move_forward(store: RunStore) -> None:
    store.add_environment("env01", unix_user="cr-env01", display=":101")
    store.set_generation("env01", 1)
    with pytest.raises(RunStoreError):
        store.set_generation("env01", 1)
    assert store.environments()[0].generation == 1


def test_a_database_from_a_newer_cleanroom_is_refused(tmp_path: Path) -> None:
    RunStore.create(tmp_path / "r").close()
    conn = sqlite3.connect(tmp_path / "r" / "run.sqlite")
    conn.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 1}")
    conn.close()
    with pytest.raises(RunStoreError, match="newer than this cleanroom"):
        RunStore.open(tmp_path / "r")


def test_a_file_that_is_not_a_database_gives_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "run.sqlite").write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(RunStoreError, match="not a usable run database"):
        RunStore.open(tmp_path)


def test_a_run_at_the_first_schema_is_migrated_on_open_and_keeps_its_rows(tmp_path: Path) -> None:
    run = tmp_path / "old"
    run.mkdir()
    conn = sqlite3.connect(run / "run.sqlite")
    conn.executescript(MIGRATIONS[0])
    conn.execute("INSERT INTO runs (id, created_at, host) VALUES (1, 0, 'h')")
    conn.execute("INSERT INTO canary_samples (window, at, ok) VALUES (1, 5.0, 1)")
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()

    with RunStore.open(run) as store:
        assert store.schema_version == len(MIGRATIONS)
        [s] = store.canary_samples()
        assert (s.at, s.ok, s.sources) == (5.0, True, ())
        store.add_canary_sample(CanarySample(6.0, True, sources=("env02",)))
        assert store.canary_samples()[1].sources == ("env02",)


def test_a_cross_row_marks_the_rollouts_it_names_invalid(store: RunStore) -> None:
    named, bystander = mint("env01-w001-r0001"), mint("env02-w001-r0002")
    for t in (named, bystander):
        store.start_rollout(t, task="form")
        store.finish_rollout(t.rollout_id, Outcome.success())

    changed = store.mark_invalid([named.rollout_id], Reason.ISOLATION, "audit: env02 -> env01")

    by_id = {r.rollout_id: r for r in store.rollouts()}
    assert changed == 1
    assert by_id[named.rollout_id].reason is Reason.ISOLATION
    assert by_id[bystander.rollout_id].outcome is Status.SUCCESS


def test_latency_samples_and_leaky_control_results_round_trip(store: RunStore) -> None:
    samples = [
        LatencySample("dialog_steal", "env02", 1.0, 48.5, "before", 1),
        LatencySample("dialog_steal", "env02", 2.0, 61.0, "during", 1),
    ]
    assert store.add_latency_samples(samples) == 2
    assert store.latency_samples("dialog_steal") == samples
    leak = LeakyControlResult("clipboard", "shared-clipboard", True, 12, 4, "fired on trial 0")
    store.add_leaky_control(leak)
    assert store.leaky_controls() == [leak]


def test_row_counts_are_per_result_and_per_window(store: RunStore) -> None:
    store.add_isolation_rows(
        [
            IsolationRow("clipboard", 0, "env01", "env02", RowResult.CLEAN, 1),
            IsolationRow("clipboard", 1, "env01", "env02", RowResult.CROSS, 1),
            IsolationRow("clipboard", 0, "env01", "env02", RowResult.LOST, 2),
        ]
    )
    assert store.row_counts(1) == {RowResult.CLEAN: 1, RowResult.CROSS: 1, RowResult.LOST: 0}
    assert store.row_counts()[RowResult.LOST] == 1


def test_close_waits_for_a_write_in_progress_and_later_writes_fail_cleanly(
    tmp_path: Path,
) -> None:
    store = RunStore.create(tmp_path / "run")
    closed = threading.Event()
    with store._write:  # a write in progress on another thread holds this lock
        closer = threading.Thread(target=lambda: (store.close(), closed.set()))
        closer.start()
        assert not closed.wait(0.2)  # the close waits for the write
    assert closed.wait(5)
    closer.join()
    with pytest.raises(sqlite3.ProgrammingError):
        store.open_window(1)


@pytest.mark.parametrize(
    ("ended", "run_status", "rollout_reason"),
    [
        ("finished", "finished", None),
        ("interrupted", "interrupted", Reason.INTERRUPTED),
        ("failed", "failed", Reason.INTERRUPTED),
    ],
)
def test_a_run_ends_as_its_loop_ended_and_what_it_left_open_is_interrupted(
    tmp_path: Path, ended: str, run_status: str, rollout_reason: Reason | None
) -> None:
    # given a run whose loop left a window and a rollout open
    store = RunStore.create(tmp_path / "run")
    store.open_window(1)
    store.start_rollout(mint("env01-w001-r0001"), task="rename")
    # when it ends
    store.end(ended)
    # then the run records how, and an unfinished run's rollout is interrupted
    with RunStore.open(tmp_path / "run", owner=False) as reader:
        assert reader.run_info()["status"] == run_status
        assert [r.reason for r in reader.rollouts()] == [rollout_reason]
