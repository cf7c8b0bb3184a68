"""A run across nodes in the run database: a node's records reach the driver's database
with the node's name, once however often they are copied, with every later change of a
rollout; a node's view reads only its own; a lost node's open rollouts and its share of
the window are recorded as lost."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cleanroom.core.isolation import IsolationRow, RowResult
from cleanroom.core.outcomes import Outcome, Reason, Status
from cleanroom.core.publish import ControlResult
from cleanroom.core.tokens import RolloutId, mint
from cleanroom.store.node_records import BATCH_LIMIT, Cursor
from cleanroom.store.rundb import LeakyControlResult, RunStore, RunStoreError, WatchRecord


@pytest.fixture
def driver(tmp_path: Path) -> Iterator[RunStore]:
    store = RunStore.create(tmp_path / "driver")
    yield store
    store.close()


def _node_store(path: Path, fired: bool = True) -> RunStore:
    """A node's own database after one window: two rollouts, rows, a control."""
    store = RunStore.create(path)
    store.add_environment("env00")
    store.add_environment("env01", unix_user="cr-env01", display=":10")
    store.set_watch(WatchRecord("parked_console", True))
    store.add_control_result(ControlResult(3, 3, 2, 20) if fired else ControlResult(0, 3, 0, 20))
    store.open_window(1)
    for seq in (1, 2):
        token = mint(RolloutId("env01", 1, seq))
        store.start_rollout(token, "writer")
    store.finish_rollout("env01-w001-r0001", Outcome.success())
    store.add_isolation_rows(
        [IsolationRow("clipboard", t, "env01", "env00", RowResult.CLEAN, 1) for t in range(3)]
    )
    store.add_leaky_control(LeakyControlResult("clipboard", "shared display", True, 2, 1))
    return store


def _copy_all(node: RunStore, driver: RunStore, name: str, cursor: Cursor) -> Cursor:
    batch = node.changes_since(cursor)
    driver.copy_from_node(name, batch)
    return cursor.after(batch)


def test_a_nodes_records_arrive_with_its_name_and_once_however_often_copied(
    tmp_path: Path, driver: RunStore
) -> None:
    node = _node_store(tmp_path / "a")
    batch = node.changes_since(Cursor())
    assert driver.copy_from_node("a", batch) > 0
    # The same batch again (a reply lost, the pull asked again) adds nothing.
    assert driver.copy_from_node("a", batch) == 0
    view = driver.node_view("a")
    assert len(view.isolation_rows(1)) == 3
    assert [r.rollout_id for r in view.rollouts()] == ["env01-w001-r0001", "env01-w001-r0002"]
    assert {r.node for r in driver.rollouts()} == {"a"}
    assert [e.name for e in view.environments()] == ["env00", "env01"]
    assert view.control_results() == [ControlResult(3, 3, 2, 20)]
    assert view.watches()["parked_console"].active
    assert [w.index for w in view.windows()] == [1]
    assert view.window_status(1) == "open"
    node.close()


def test_a_rollouts_later_change_arrives_past_the_cursor(tmp_path: Path, driver: RunStore) -> None:
    node = _node_store(tmp_path / "a")
    cursor = _copy_all(node, driver, "a", Cursor())
    assert node.changes_since(cursor).records == 0  # nothing new
    node.finish_rollout("env01-w001-r0002", Outcome.agent_fault(Reason.TAMPER, "forged"))
    node.mark_invalid(["env01-w001-r0001"], Reason.ISOLATION, "a token crossed")
    node.close_window(1)
    batch = node.changes_since(cursor)
    assert len(batch.rollouts) == 2 and batch.records == 2
    driver.copy_from_node("a", batch)
    got = {r.rollout_id: (r.outcome, r.reason) for r in driver.rollouts()}
    assert got == {
        "env01-w001-r0001": (Status.INVALID, Reason.ISOLATION),
        "env01-w001-r0002": (Status.FAILURE, Reason.TAMPER),
    }
    assert driver.node_view("a").window_status(1) == "closed"
    # An older copy of a rollout arriving late never undoes a newer one.
    driver.copy_from_node("a", node.changes_since(Cursor()))
    assert driver.rollouts()[0].outcome is Status.INVALID
    node.close()


def test_two_nodes_with_the_same_environment_names_stay_apart(
    tmp_path: Path, driver: RunStore
) -> None:
    a, b = _node_store(tmp_path / "a"), _node_store(tmp_path / "b", fired=False)
    _copy_all(a, driver, "a", Cursor())
    _copy_all(b, driver, "b", Cursor())
    assert len(driver.rollouts()) == 4 and len(driver.isolation_rows()) == 6
    assert driver.node_view("b").control_results() == [ControlResult(0, 3, 0, 20)]
    assert len(driver.node_view("a").rollouts()) == 2
    a.close()
    b.close()


def test_a_node_far_behind_is_caught_up_in_bounded_batches(
    tmp_path: Path, driver: RunStore
) -> None:
    node = RunStore.create(tmp_path / "a")
    node.open_window(1)
    n = BATCH_LIMIT + 10
    node.add_isolation_rows(
        IsolationRow("clipboard", t, "env01", "env02", RowResult.CLEAN, 1) for t in range(n)
    )
    cursor, pulls = Cursor(), 0
    while True:
        batch = node.changes_since(cursor)
        driver.copy_from_node("a", batch)
        cursor, pulls = cursor.after(batch), pulls + 1
        if not batch.full:
            break
    assert pulls == 2 and len(driver.isolation_rows()) == n
    node.close()


def test_a_lost_node_has_its_open_rollouts_interrupted_and_a_lost_row_per_check(
    tmp_path: Path, driver: RunStore
) -> None:
    node = _node_store(tmp_path / "a")
    driver.add_node("a", node_id="n1", host="h", envs=1, run_dir="/x")
    driver.open_window(1)
    _copy_all(node, driver, "a", Cursor())
    interrupted = driver.lose_node("a", 1, ["clipboard", "token_sweep"], "its raylet died")
    assert interrupted == 1
    open_one = next(r for r in driver.rollouts() if r.rollout_id == "env01-w001-r0002")
    assert (open_one.outcome, open_one.reason) == (Status.INVALID, Reason.INTERRUPTED)
    finished = next(r for r in driver.rollouts() if r.rollout_id == "env01-w001-r0001")
    assert finished.outcome is Status.SUCCESS
    lost = [r for r in driver.isolation_rows(1) if r.result is RowResult.LOST]
    assert {r.test for r in lost} == {"clipboard", "token_sweep"}
    assert driver.node_window_statuses(1) == {"a": "lost"}
    # A copy that arrives after the loss does not make its share of the window open again.
    driver.copy_from_node("a", node.changes_since(Cursor()))
    assert driver.node_window_statuses(1) == {"a": "lost"}
    (record,) = driver.nodes()
    assert (record.status, record.detail) == ("lost", "its raylet died")
    node.close()


def test_a_nodes_view_is_read_only(tmp_path: Path, driver: RunStore) -> None:
    with pytest.raises(RunStoreError, match="read-only"):
        driver.node_view("a").open_window(1)
