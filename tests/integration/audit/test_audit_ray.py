"""``cleanroom audit --ray``: a real two-node Ray cluster on this machine (a head and a
second node process, on loopback, each declaring one Docker slot). The audit runs across
both; the second node is killed mid-audit; its jobs come back ``interrupted`` (never
scored, never silently rerun) and complete when the audit is resumed."""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from cleanroom.lifecycle import wait_until
from cleanroom.ray_cluster.local import LocalCluster
from cleanroom.verifiers.container.runtime.docker import DockerRuntime

from .conftest import CLEANROOM, QUICK, REPO, TASKS, run_audit

pytestmark = [pytest.mark.docker, pytest.mark.slow]

# The tasks the cluster audits, and the flags each must end with.
AUDITED = {
    "good": [],
    "noop-passes": ["passes_with_no_work"],
    "oracle-fails": ["oracle_fails"],
    "answers-visible": ["answers_visible", "forgeable_shared"],
}


@pytest.fixture()
def cluster() -> Iterator[LocalCluster]:
    """A head and a second node on 127.0.0.1, one Docker slot each; the second node's
    containers carry a label of their own. Both stopped afterwards, whatever happened."""
    labels = ["", f"cleanroom.audit.node=second-{uuid.uuid4().hex[:8]}"]
    # The workers import the cleanroom under test.
    started = LocalCluster.start(labels, docker_slots=1, python_path=str(REPO / "src"))
    try:
        yield started
    finally:
        started.stop()


# A node lost mid-audit: a long cluster run, in `make test-integrations`.
@pytest.mark.integrations
def test_a_lost_node_leaves_its_jobs_interrupted_and_resume_completes_them(
    cluster: LocalCluster, runtime: DockerRuntime, tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    tasks = [str(TASKS / name) for name in AUDITED]
    audit = subprocess.Popen(
        [
            str(CLEANROOM),
            "audit",
            *tasks,
            *QUICK,
            "--json",
            "--ray",
            cluster.address,
            "--run-dir",
            str(run_dir),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # Given the second node running a job (its containers carry its label) ...
        on_second = wait_until(
            lambda: runtime.docker.containers_labelled(cluster.nodes[1].labels) or None, 120
        )
        assert on_second, "no job reached the second node"
        # ... when it dies mid-job ...
        cluster.kill_node(1)
        out, err = audit.communicate(timeout=300)
    finally:
        if audit.poll() is None:
            audit.kill()
            audit.wait()
    # ... then its job is interrupted, with no outcome, and the audit is incomplete.
    assert audit.returncode == 2, out[-2000:] + err[-3000:]
    tasks_out = json.loads(out)["tasks"]
    lost = [t for t in tasks_out if t["status"] == "interrupted"]
    assert lost, tasks_out
    for task in lost:
        assert task["verdict"] == "interrupted" and task["flags"] == [] and task["runs"] == []
        assert "lost" in task["detail"]
    for task in tasks_out:
        if task["status"] == "done":
            assert task["flags"] == AUDITED[task["name"]]
    # What the lost jobs left on the daemon was removed.
    assert runtime.docker.containers_labelled(cluster.nodes[1].labels) == []
    # When the audit is resumed on the head alone, only the interrupted jobs run again.
    again = run_audit(*tasks, *QUICK, "--json", "--ray", cluster.address, run_dir=run_dir)
    assert again.proc.returncode == 1, again.proc.stderr[-3000:]
    resumed = {t["name"]: t for t in again.data["tasks"]}
    assert {name: t["flags"] for name, t in resumed.items()} == AUDITED
    assert all(t["status"] == "done" for t in resumed.values())
    for task in tasks_out:
        assert resumed[task["name"]]["attempts"] == (2 if task in lost else 1)
