"""``cleanroom run --ray`` on a real Ray cluster of two nodes on this machine (a head and a
second ``ray start`` on loopback, each declaring two desktops): a pool per node, one run
record at the driver, a merged number next to both nodes' fired controls; and, with one
node's control broken on purpose and that node killed mid-window, the merged number
refused by the node's name, its open rollout interrupted, the window failed with its
lost rows, and every record of the other node kept.

Both start a cluster of desktops for minutes on the two cores: they run in `make
test-integrations`, beside the other long cluster runs."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from cleanroom.core.isolation import RowResult
from cleanroom.core.outcomes import Reason, Status
from cleanroom.lifecycle import wait_until
from cleanroom.ray_cluster.local import LocalCluster
from cleanroom.store.rundb import RunStore, RunStoreError

REPO = Path(__file__).resolve().parents[3]
PYTHON = Path(sys.executable)
CLI = PYTHON.with_name("cleanroom")
# Small pools and windows, sized for two cores shared by both nodes.
QUICK = ["--tasks", "writer,form", "--tests", "clipboard", "--trials-scale", "0.1",
         "--no-warm-standby"]  # fmt: skip

pytestmark = [pytest.mark.slow, pytest.mark.integrations]


@pytest.fixture()
def cluster(desktop_stack: None) -> Iterator[LocalCluster]:
    """Two nodes on 127.0.0.1, two desktops each; the second also declares the
    ``broken_control`` marker a test may read. Both stopped afterwards."""
    started = LocalCluster.start(
        ["", ""],
        python_path=str(REPO / "src"),
        resources=[{"desktops": 2}, {"desktops": 2, "broken_control": 1}],
    )
    try:
        yield started
    finally:
        started.stop()
        # What a killed node's pool left (users, displays, homes) goes, as after any crash.
        subprocess.run([str(CLI), "envs", "gc"], capture_output=True, timeout=300, check=False)


def _report(run: Path) -> dict:
    proc = subprocess.run(
        [str(CLI), "report", str(run), "--json"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    return json.loads(proc.stdout)


def _control_errors(folder: Path) -> dict[str, str]:
    """Why a node's control could not run, as it wrote it (its traceback's last lines)."""
    return {
        str(path.relative_to(folder)): "\n".join(path.read_text().splitlines()[-12:])
        for path in sorted(folder.rglob("control-error-*.txt"))
    }


def _counts(store: RunStore) -> tuple[int, int, int, int]:
    return (
        len(store.isolation_rows()),
        len(store.rollouts()),
        len(store.canary_samples()),
        len(store.control_results()),
    )


def _node_dbs_match_the_driver(run: Path, nodes: list[str]) -> None:
    """Every record of each named node's own database is in the driver's, with its name."""
    with RunStore.open(run, owner=False) as driver:
        records = {n.name: n for n in driver.nodes()}
        for name in nodes:
            with RunStore.open(records[name].run_dir, owner=False) as own:
                assert _counts(driver.node_view(name)) == _counts(own), name
                kept = driver.node_view(name).rollouts()
                mine = own.rollouts()
                assert {(r.rollout_id, r.outcome) for r in kept} == {
                    (r.rollout_id, r.outcome) for r in mine
                }


@pytest.mark.timeout(1500)
def test_two_nodes_publish_a_merged_number_next_to_both_fired_controls(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    proc = subprocess.run(
        [str(CLI), "run", "--ray", cluster.address, "--windows", "1", *QUICK,
         "--run", str(run), "--node-runs", str(tmp_path / "nodes")],
        capture_output=True, text=True, timeout=1400,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-3000:]
    data = _report(run)
    nodes = data["nodes"]
    assert len(nodes) == 2 and all(n["status"] == "finished" for n in nodes)
    for node in nodes:
        control = node["positive_control"]
        assert control is not None, (node, _control_errors(tmp_path / "nodes"), proc.stdout[-3000:])
        assert control["typing_cross"] > 0 and control["clipboard_cross"] > 0, node
        assert node["isolation"]["published"], node["isolation"]
        assert len(node["environments"]) == 2
    merged = data["isolation"]
    assert merged["published"], merged
    assert "on 2 node(s), each node's positive control fired" in merged["text"]
    assert data["env_hours"] == pytest.approx(sum(n["env_hours"] for n in nodes))
    # Every check counted is proven on both nodes, by name.
    for test, how in data["proven_by_leaky_control"].items():
        assert {h.rsplit(" on ", 1)[1] for h in how} == {n["name"] for n in nodes}, test
    assert {r["node"] for r in data["rollouts"]} == {n["name"] for n in nodes}
    _node_dbs_match_the_driver(run, [n["name"] for n in nodes])
    # Each node's evidence is in the driver's folder too: its control's, its checks'.
    for node in nodes:
        kept = run / "nodes" / node["name"].replace("/", "-")
        assert json.loads((kept / "control-evidence.json").read_text())
        assert list((kept / "evidence").rglob("*.json")), node["name"]


DRIVER = """
import sys
from pathlib import Path
from rich.console import Console
from cleanroom.cluster.driver import ClusterConfig, run_across_nodes
from cleanroom.cluster.node_run import NodeSettings
from cleanroom.harness.settings import ControlSettings

def break_control(node, settings):
    # The node that declares the marker gets a control with nothing to see: it cannot fire.
    if node.units("broken_control"):
        return settings.changed(control=ControlSettings(typing_rounds=1, clipboard_trials=0))
    return settings

settings = NodeSettings(run_key="broken", node_runs=sys.argv[3], tasks=("writer", "form"),
                        tests=("clipboard",), trials_scale=0.1, warm_standby=False,
                        leaky_controls=False)
result = run_across_nodes(
    ClusterConfig(address=sys.argv[1], run_dir=Path(sys.argv[2]), settings=settings,
                  windows=2, for_node=break_control),
    Console(),
)
print("RESULT", result.status, sorted(result.windows.items()), sorted(result.lost))
"""


@pytest.mark.timeout(1500)
def test_a_broken_control_refuses_by_name_and_a_node_killed_mid_window_fails_it_loudly(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    broken_id = cluster.node_ids()[1]
    script = tmp_path / "driver.py"
    script.write_text(textwrap.dedent(DRIVER))
    driver = subprocess.Popen(
        [str(PYTHON), str(script), cluster.address, str(run), str(tmp_path / "nodes")],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        # Once the broken node's first rollout of window 1 is running (the driver has
        # copied its start) ...
        def open_rollout() -> str | None:
            try:
                store = RunStore.open(run, owner=False)
            except RunStoreError:  # not made yet, or its schema not yet in place
                return None
            with store:
                names = [n.name for n in store.nodes() if n.node_id == broken_id]
                if not names:
                    return None
                rollouts = store.node_view(names[0]).rollouts(1)
                return next((r.rollout_id for r in rollouts if not r.finished), None)

        interrupted = wait_until(open_rollout, 900, poll_s=0.2)
        assert interrupted, "no rollout of the second node was seen running"
        # ... its machine goes away.
        cluster.kill_node(1)
        out, _ = driver.communicate(timeout=1200)
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()
    assert driver.returncode == 0, out[-6000:]
    assert "RESULT finished [(1, 'failed'), (2, 'closed')]" in out, out[-6000:]

    with RunStore.open(run, owner=False) as store:
        (lost,) = [n for n in store.nodes() if n.node_id == broken_id]
        (kept,) = [n for n in store.nodes() if n.node_id != broken_id]
        assert (lost.status, kept.status) == ("lost", "finished")
        # Its rollout that was running is invalid (interrupted), never a 0; none is open.
        mine = {r.rollout_id: r for r in store.node_view(lost.name).rollouts()}
        assert (mine[interrupted].outcome, mine[interrupted].reason) == (
            Status.INVALID,
            Reason.INTERRUPTED,
        )
        assert all(r.finished for r in mine.values())
        # Its share of window 1 is lost, with a lost row of every planned check.
        assert store.node_window_statuses(1)[lost.name] == "lost"
        lost_rows = [r for r in store.node_view(lost.name).isolation_rows(1)
                     if r.result is RowResult.LOST]  # fmt: skip
        assert {r.test for r in lost_rows} == {
            "clipboard",
            "canaries",
            "parked_console",
            "token_sweep",
            "form_audit",
        }
        assert store.window_status(1) == "failed"
        # The run went on with the node left: window 2 is the kept node's alone.
        assert set(store.node_window_statuses(2)) == {kept.name}
    # Every record of the node that was kept reached the driver.
    _node_dbs_match_the_driver(run, [kept.name])

    data = _report(run)
    merged = data["isolation"]
    assert not merged["published"]
    assert f"{lost.name} (its positive control did not fire" in merged["reason"]
    assert f"of {lost.name} are not counted" in merged["reason"]
    by_name = {n["name"]: n for n in data["nodes"]}
    assert not by_name[lost.name]["isolation"]["published"]
    assert by_name[lost.name]["status"] == "lost"
    assert [w["status"] for w in data["windows"]] == ["failed", "closed"]
