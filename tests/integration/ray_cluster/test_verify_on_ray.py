"""``cleanroom verify --ray`` on a real two-node Ray cluster of this machine (a head and a
second node, on loopback, one Docker slot each, both on this machine's daemon).

Example tasks verified on the cluster end as they end verified locally, spread over both
nodes; a container another harness started and acted in is verified on a node whose
daemon holds it, as locally; a container no daemon holds is excluded; and a node killed
mid-verification leaves its task ``interrupted`` (invalid, never a 0), and nothing of it
on the daemon.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import cleanroom
from cleanroom.core.outcomes import Reason, Status
from cleanroom.lifecycle import wait_until
from cleanroom.ray_cluster.local import LocalCluster
from cleanroom.verifiers.container.runtime.docker import DockerRuntime
from cleanroom.verifiers.container.task import load_task

from ..acted_containers import ORACLE, PLANTER, act_in, start_container

pytestmark = [pytest.mark.docker, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[3]
CLEANROOM = REPO / ".venv" / "bin" / "cleanroom"
EXAMPLES = REPO / "examples" / "tasks"
# Few, quick tasks: their images are built once and cached.
TASKS = ("fix-median", "csv-report", "env-templates")
NODE_LABEL = "cleanroom.ray.node"


def start_cluster(docker_labels: dict[str, str]) -> tuple[LocalCluster, list[str]]:
    """A head and a second node on 127.0.0.1, one Docker slot each. What each node's
    workers start carries the tests' labels (removed with the rest at the end) and a
    label of that node's own: the second item, one ``key=value`` per node."""
    marks = [f"{NODE_LABEL}={role}-{uuid.uuid4().hex[:8]}" for role in ("head", "second")]
    shared = ",".join(f"{k}={v}" for k, v in docker_labels.items())
    # The workers import the cleanroom under test.
    cluster = LocalCluster.start(
        [f"{shared},{mark}" for mark in marks], docker_slots=1, python_path=str(REPO / "src")
    )
    return cluster, marks


@pytest.fixture(scope="module")
def cluster(docker_labels: dict[str, str]) -> Iterator[LocalCluster]:
    started, _ = start_cluster(docker_labels)
    try:
        yield started
    finally:
        started.stop()


def verify(*args: str, timeout: float = 300) -> Any:
    """``cleanroom verify ARGS --json``: what it printed, parsed."""
    proc = subprocess.run(
        [str(CLEANROOM), "verify", *args, "--json"],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert proc.stdout, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def summary(payload: dict[str, Any]) -> tuple[str, float | None, str | None]:
    return payload["outcome"], payload["score"], payload["reason"]


# The no-op agent's zeros on the cluster: in `make test-integrations`.
@pytest.mark.parametrize(
    "agent", ["--solution", pytest.param("--noop", marks=pytest.mark.integrations)]
)
def test_tasks_verified_on_the_cluster_end_as_they_do_locally(
    cluster: LocalCluster, agent: str
) -> None:
    paths = [str(EXAMPLES / name) for name in TASKS]
    local = verify(*paths, agent, "--jobs", "2")
    on_ray = verify(*paths, agent, "--ray", cluster.address)
    assert [summary(p) for p in on_ray] == [summary(p) for p in local]
    # In the order given.
    assert [p["details"]["task"] for p in on_ray] == [p["details"]["task"] for p in local]
    # One slot per node, the tasks submitted at once: both nodes verify some.
    assert len({p["node"] for p in on_ray}) == 2, [p["node"] for p in on_ray]
    assert "node" not in local[0]


@pytest.fixture
def acted(runtime: DockerRuntime) -> Iterator[Callable[[str], str]]:
    """Start fix-median's image as another harness would, run ``script`` in it as the
    agent, and give the container's name; removed afterwards."""
    task = load_task(EXAMPLES / "fix-median")
    started: list[str] = []

    def act(script: str) -> str:
        ident, name = start_container(runtime, task)
        started.append(ident)
        act_in(runtime, task, ident, script)
        return name

    yield act
    for ident in started:
        runtime.containers.remove(ident)


@pytest.mark.parametrize(
    ("script", "expected"),
    [(ORACLE, ("success", 1.0, None)), (PLANTER, ("failure", 0.0, "tamper"))],
    ids=["oracle", "planter"],
)
def test_a_container_is_verified_on_a_node_holding_it_as_locally(
    cluster: LocalCluster,
    acted: Callable[[str], str],
    script: str,
    expected: tuple[str, float, str | None],
) -> None:
    task = str(EXAMPLES / "fix-median")
    # A verification freezes or kills its container: one container for each.
    local = verify(task, "--container", acted(script))
    on_ray = verify(task, "--container", acted(script), "--ray", cluster.address)
    assert summary(local) == expected, local["detail"]
    assert summary(on_ray) == expected, on_ray["detail"]
    assert on_ray["node"], on_ray


def test_a_container_no_daemon_holds_is_excluded(cluster: LocalCluster) -> None:
    gone = f"no-such-container-{uuid.uuid4().hex[:8]}"
    verified = cleanroom.verify_container_on_ray(cluster.address, EXAMPLES / "fix-median", gone)
    assert (verified.outcome.status, verified.outcome.reason) == (
        Status.INVALID,
        Reason.VERIFIER_UNAVAILABLE,
    )
    assert f"no Docker node's docker daemon has container {gone!r}" in verified.outcome.detail
    assert verified.node is None
    assert cleanroom.reward_or_none(verified.outcome) is None


@pytest.mark.integrations  # a node killed and waited for: `make test-integrations`
def test_a_node_lost_mid_verification_leaves_its_task_interrupted_never_a_zero(
    docker_labels: dict[str, str], runtime: DockerRuntime
) -> None:
    cluster, marks = start_cluster(docker_labels)
    try:
        # Two tasks whose agents sleep: one on each node's slot.
        paths = [str(EXAMPLES / "fix-median"), str(EXAMPLES / "env-templates")]
        argv = [*paths, "--agent", "sleep 20", "--json", "--ray", cluster.address]
        proc = subprocess.Popen(
            [str(CLEANROOM), "verify", *argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            # Given the second node running a verification (its agent's container) ...
            on_second = wait_until(
                lambda: runtime.docker.containers_labelled(marks[1]) or None, 120, poll_s=0.5
            )
            assert on_second, "no verification reached the second node"
            # ... when the node dies mid-verification ...
            cluster.kill_node(1)
            out, err = proc.communicate(timeout=240)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    finally:
        cluster.stop()
    # ... then its task is invalid, interrupted, with no score; the other one is scored.
    assert proc.returncode == 2, out[-2000:] + err[-3000:]
    payloads = json.loads(out)
    lost = [p for p in payloads if p["reason"] == "interrupted"]
    assert len(lost) == 1, [summary(p) for p in payloads]
    assert (lost[0]["outcome"], lost[0]["score"]) == ("invalid", None)
    assert "lost" in lost[0]["detail"]
    (other,) = [p for p in payloads if p is not lost[0]]
    assert other["outcome"] == "failure" and other["node"], other
    # What the lost verification started was removed from the daemon.
    assert runtime.docker.containers_labelled(marks[1]) == []
