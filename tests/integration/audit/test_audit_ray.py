"""``cleanroom audit --ray``: a real two-node Ray cluster on this machine (a head and a
second node process, on loopback, each declaring one Docker slot). The audit runs across
both; the second node is killed mid-audit; its jobs come back ``interrupted`` (never
scored, never silently rerun) and complete when the audit is resumed."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from cleanroom.lifecycle import wait_until
from cleanroom.verifiers.container.docker_runtime import DockerRuntime

from .conftest import CLEANROOM, QUICK, REPO, TASKS, run_audit

pytestmark = [pytest.mark.docker, pytest.mark.slow]

RAY = REPO / ".venv" / "bin" / "ray"
DOCKER_SLOT = json.dumps({"docker": 1})
# The tasks the cluster audits, and the flags each must end with.
AUDITED = {
    "good": [],
    "noop-passes": ["passes_with_no_work"],
    "oracle-fails": ["oracle_fails"],
    "answers-visible": ["answers_visible"],
}


@dataclass
class Cluster:
    address: str
    second_node_session: int  # every process of the second node is in this session
    second_node_label: str  # every container the second node's jobs start carries it


def _free_ports(n: int) -> list[int]:
    with contextlib.ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(n)]
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]


def _node_ports() -> list[str]:
    names = (
        "--node-manager-port",
        "--object-manager-port",
        "--metrics-export-port",
        "--dashboard-agent-listen-port",
        "--dashboard-agent-grpc-port",
        "--runtime-env-agent-port",
    )
    return [f"{name}={port}" for name, port in zip(names, _free_ports(len(names)), strict=True)]


def _ray_start(args: list[str], temp_dir: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
    # Its own session: Ray puts each worker in a process group of its own, but all of a
    # node's processes stay in the session of the `ray start` that made it.
    return subprocess.Popen(
        [
            str(RAY),
            "start",
            "--node-ip-address=127.0.0.1",
            f"--temp-dir={temp_dir}",
            "--num-cpus=1",
            f"--resources={DOCKER_SLOT}",
            "--disable-usage-stats",
            *_node_ports(),
            *args,
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def _kill_session(sid: int) -> None:
    """SIGKILL every process of session ``sid`` (the second node's raylet, its workers and
    helpers), as if its machine went away."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            # After the command name: state, ppid, process group, then the session id.
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if int(fields[3]) == sid:
                os.kill(int(entry.name), signal.SIGKILL)


def _started(proc: subprocess.Popen[bytes], what: str) -> None:
    out, _ = proc.communicate(timeout=120)
    if proc.returncode != 0:
        pytest.fail(f"ray start ({what}) exited {proc.returncode}: {out.decode()[-2000:]}")


@pytest.fixture()
def cluster() -> Iterator[Cluster]:
    """A head and a second node on 127.0.0.1, each with its own temp dir and one Docker
    slot; both stopped (``ray stop --force``) afterwards, whatever happened."""
    (head_port,) = _free_ports(1)
    # Short temp dirs: Ray's socket paths must fit in a Unix socket name.
    temp = [tempfile.mkdtemp(prefix="ray-", dir="/tmp") for _ in range(2)]
    # The workers import the cleanroom under test.
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")]),
    }
    label = f"cleanroom.audit.node=second-{uuid.uuid4().hex[:8]}"
    try:
        head = _ray_start(
            [
                "--head",
                f"--port={head_port}",
                "--include-dashboard=false",
            ],
            temp[0],
            env,
        )
        _started(head, "head")
        address = f"127.0.0.1:{head_port}"
        second = _ray_start([f"--address={address}"], temp[1], {**env, "CLEANROOM_LABELS": label})
        _started(second, "second node")
        yield Cluster(address, second.pid, label)
    finally:
        subprocess.run([str(RAY), "stop", "--force"], capture_output=True, timeout=120, check=False)
        for folder in temp:
            shutil.rmtree(folder, ignore_errors=True)


def test_a_lost_node_leaves_its_jobs_interrupted_and_resume_completes_them(
    cluster: Cluster, runtime: DockerRuntime, tmp_path: Path
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
            lambda: runtime.docker.containers_labelled(cluster.second_node_label) or None, 120
        )
        assert on_second, "no job reached the second node"
        # ... when it dies mid-job ...
        _kill_session(cluster.second_node_session)
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
    assert runtime.docker.containers_labelled(cluster.second_node_label) == []
    # When the audit is resumed on the head alone, only the interrupted jobs run again.
    again = run_audit(*tasks, *QUICK, "--json", "--ray", cluster.address, run_dir=run_dir)
    assert again.proc.returncode == 1, again.proc.stderr[-3000:]
    resumed = {t["name"]: t for t in again.data["tasks"]}
    assert {name: t["flags"] for name, t in resumed.items()} == AUDITED
    assert all(t["status"] == "done" for t in resumed.values())
    for task in tasks_out:
        assert resumed[task["name"]]["attempts"] == (2 if task in lost else 1)
