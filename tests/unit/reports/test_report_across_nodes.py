"""The report of a run across nodes, read from a driver's database filled the way the
driver fills it (each node's own database copied in with its name): each node's own
number, the merged one, and a node whose control did not fire refused by name."""

from __future__ import annotations

from pathlib import Path

from cleanroom.core.isolation import IsolationRow, RowResult
from cleanroom.core.publish import ControlResult, Publication, Refusal
from cleanroom.core.tokens import RolloutId, mint
from cleanroom.reports.model import build_report
from cleanroom.store.node_records import Cursor
from cleanroom.store.rundb import LeakyControlResult, RunStore

CHECKS = ("clipboard",)


def _node_run(path: Path, *, fired: bool) -> RunStore:
    """A node's own database: one closed window of 30 minutes, two acting environments."""
    store = RunStore.create(path)
    for env in ("env00", "env01", "env02"):
        store.add_environment(env)
    store.add_control_result(ControlResult(3, 3, 5, 20) if fired else ControlResult(0, 3, 0, 20))
    store.open_window(1, started_at=1000.0)
    store.start_rollout(mint(RolloutId("env01", 1, 1)), "writer", started_at=1001.0)
    store.add_isolation_rows(
        [IsolationRow("clipboard", t, "env01", "env02", RowResult.CLEAN, 1) for t in range(5)]
    )
    store.close_window(1, ended_at=1000.0 + 1800)
    store.add_leaky_control(LeakyControlResult("clipboard", "shared-display", True, 2, 1))
    return store


def _driver(tmp_path: Path, fired: dict[str, bool]) -> RunStore:
    driver = RunStore.create(tmp_path / "driver", meta={"config": {"trials_scale": 1.0}})
    driver.open_window(1, started_at=1000.0)
    for name, ok in fired.items():
        node = _node_run(tmp_path / name, fired=ok)
        driver.add_node(name, node_id=name, host="h", envs=2, run_dir=str(node.run_dir))
        driver.copy_from_node(name, node.changes_since(Cursor()))
        node.close()
        driver.end_node(name, "finished")
    driver.close_window(1, ended_at=1000.0 + 1800)
    return driver


def test_every_node_fired_gives_each_nodes_number_and_the_merged_one(tmp_path: Path) -> None:
    driver = _driver(tmp_path, {"a": True, "b": True})
    report = build_report(driver)
    assert isinstance(report.verdict, Publication), report.verdict
    # Two nodes, two acting environments each, half an hour: two environment-hours.
    assert report.env_hours == 2.0 and report.verdict.env_hours == 2.0
    assert [n.name for n in report.nodes] == ["a", "b"]
    assert all(isinstance(n.verdict, Publication) and n.env_hours == 1.0 for n in report.nodes)
    assert report.environments == ["a:env01", "a:env02", "b:env01", "b:env02"]
    data = report.to_json()
    assert [n["name"] for n in data["nodes"]] == ["a", "b"]
    assert {r["node"] for r in data["rollouts"]} == {"a", "b"}
    driver.close()


def test_a_node_whose_control_did_not_fire_is_refused_by_name_and_not_counted(
    tmp_path: Path,
) -> None:
    driver = _driver(tmp_path, {"a": True, "b": False})
    report = build_report(driver)
    assert isinstance(report.verdict, Refusal)
    assert "b (its positive control did not fire" in report.verdict.reason
    # Only the node whose control fired counts its hours.
    assert report.env_hours == 1.0
    by_name = {n.name: n for n in report.nodes}
    assert isinstance(by_name["a"].verdict, Publication)
    assert isinstance(by_name["b"].verdict, Refusal)
    driver.close()


def test_a_run_on_one_machine_has_no_nodes(tmp_path: Path) -> None:
    store = _node_run(tmp_path / "one", fired=True)
    report = build_report(store)
    assert report.nodes == [] and isinstance(report.verdict, Publication)
    assert report.environments == ["env01", "env02"]
    store.close()


def test_the_html_report_shows_every_nodes_control_and_number(tmp_path: Path) -> None:
    from cleanroom.reports.html import render_html

    driver = _driver(tmp_path, {"a": True, "b": False})
    html = render_html(build_report(driver), [])
    assert "Nodes (the number above is the merged one)" in html
    assert "did not fire: typing 0 of 3" in html and "refused: " in html
    driver.close()
