"""An interrupted ``cleanroom verify`` (SIGINT, SIGTERM) removes every container and
network it made, its paused agent container among them, and exits with the signal's
conventional status."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cleanroom.verifiers.container.runtime import RuntimeUnavailable
from cleanroom.verifiers.container.runtime.docker import LABELS_ENV, DockerRuntime
from cleanroom.verifiers.container.task import load_task

from ..acted_containers import ORACLE, act_in, start_container

pytestmark = pytest.mark.docker

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "tasks"


def slow_compose_task(root: Path) -> Path:
    """compose-store, whose test.sh waits long enough to be interrupted: a run of it
    holds a services network, a service, the paused agent and the verifier."""
    task = root / "compose-store-slow"
    shutil.copytree(EXAMPLES / "compose-store", task)
    test = task / "tests" / "test.sh"
    test.write_text("#!/bin/bash\nsleep 55\n" + test.read_text().split("\n", 1)[1])
    test.chmod(0o755)
    return task


# The command line, run as `cleanroom` is.
CLI = "from cleanroom.cli import main; main()"


def labelled_env(runtime: DockerRuntime) -> tuple[str, str, dict[str, str]]:
    """A fresh token, the label that carries it, and an environment in which whatever a
    child process makes carries the test's labels and that one."""
    token = secrets.token_hex(6)
    labels = {**runtime.labels, "cleanroom.interrupted": token}
    env = {**os.environ, LABELS_ENV: ",".join(f"{k}={v}" for k, v in labels.items())}
    return token, f"cleanroom.interrupted={token}", env


def wait_for_sealed_verifier(rt: DockerRuntime, label: str, limit_s: float = 180) -> None:
    """Until the run's agent container is paused and its verifier's is running."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        found = rt.docker.containers_labelled(label)
        roles = {c.labels.get("cleanroom.role"): c.id for c in found}
        agent, verifier = roles.get("agent"), roles.get("verifier")
        if agent and verifier:
            paused = rt.docker.inspect_container(agent)["State"]["Paused"]
            if paused:
                time.sleep(2)  # test.sh under way
                return
        time.sleep(0.5)
    pytest.fail("the run never reached its verifier with the agent's container paused")


@pytest.mark.parametrize(("sig", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signalled_verify_removes_its_containers_and_networks(
    runtime: DockerRuntime, tmp_path: Path, sig: signal.Signals, status: int
) -> None:
    # Given a sealed verify whose agent container is paused, with a service and its network
    _, label, env = labelled_env(runtime)
    task = slow_compose_task(tmp_path)
    proc = subprocess.Popen(
        [sys.executable, "-c", CLI, "verify", str(task), "--solution"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for_sealed_verifier(runtime, label)
        assert runtime.docker.networks_labelled(label), "the run made no network to remove"
        assert len(runtime.docker.containers_labelled(label)) >= 3

        # When it is signalled
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()

    # Then it exits with the signal's status, having removed all it made
    assert proc.returncode == status, err
    left = runtime.docker.containers_labelled(label)
    assert left == [], [
        (c.labels.get("cleanroom.role"), runtime.docker.inspect_container(c.id)["State"])
        for c in left
    ]
    assert runtime.docker.networks_labelled(label) == []
    assert "removing the containers and networks" in err


@pytest.mark.parametrize("command", ["audit", "redteam"])
def test_a_signalled_audit_or_red_team_removes_its_containers_and_networks(
    runtime: DockerRuntime, tmp_path: Path, command: str
) -> None:
    # Given an audit (or a red-team matrix) of a task whose test.sh waits, under way
    _, label, env = labelled_env(runtime)
    task = slow_compose_task(tmp_path)
    extra = ["--run-dir", str(tmp_path / "audit")] if command == "audit" else ["--mode", "sealed"]
    proc = subprocess.Popen(
        [sys.executable, "-c", CLI, command, str(task), *extra],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for_sealed_verifier(runtime, label)

        # When it is signalled
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()

    # Then it exits as a stopped process does, having removed all it made
    assert proc.returncode == 143, err
    assert runtime.docker.containers_labelled(label) == []
    assert runtime.docker.networks_labelled(label) == []


def test_a_signalled_verify_of_another_harness_container_leaves_it_running(
    runtime: DockerRuntime, tmp_path: Path
) -> None:
    # Given http-sum's container another harness started, the oracle's server running in
    # it, verified sealed by a test.sh that waits: cleanroom froze it, read its state,
    # thawed it and started its own verifier in its network namespace
    task_dir = tmp_path / "http-sum-slow"
    shutil.copytree(EXAMPLES / "http-sum", task_dir)
    test = task_dir / "tests" / "test.sh"
    test.write_text("#!/bin/bash\nsleep 55\n" + test.read_text().split("\n", 1)[1])
    task = load_task(task_dir)
    ident, name = start_container(runtime, task)
    act_in(runtime, task, ident, ORACLE)
    _, label, env = labelled_env(runtime)
    proc = subprocess.Popen(
        [sys.executable, "-c", CLI, "verify", str(task_dir), "--container", name],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 180
        while not any(
            c.labels.get("cleanroom.role") == "verifier"
            for c in runtime.docker.containers_labelled(label)
        ):
            assert time.monotonic() < deadline, "no verifier was started"
            time.sleep(0.3)
        time.sleep(2)  # test.sh under way

        # When the verify is signalled
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    try:
        # Then its verifier is gone, and the harness's container runs on
        assert proc.returncode == 143, err
        assert runtime.docker.containers_labelled(label) == []
        state = runtime.docker.inspect_container(ident)["State"]
        assert (state["Running"], state["Paused"]) == (True, False)
    finally:
        runtime.containers.remove(ident)


def test_a_stopped_runtime_thaws_a_container_it_froze_and_did_not_make(
    runtime: DockerRuntime,
) -> None:
    # Given a container of another harness's, frozen by a runtime that also made a network
    theirs = runtime.docker.run_container(
        "cleanroom/base:bookworm", ["sleep", "infinity"], network_mode="none", labels=runtime.labels
    )
    ours = DockerRuntime(runtime.docker, runtime.labels)
    try:
        ours.containers.freeze(theirs)
        network = ours.networks.create("stopped")

        # When the runtime stops
        left = ours.stop()

        # Then their container runs on, thawed; the network is gone; nothing more is frozen
        assert left.frozen == (theirs,)
        state = runtime.docker.inspect_container(theirs)["State"]
        assert (state["Running"], state["Paused"]) == (True, False)
        assert network not in runtime.docker.networks_labelled(*_pairs(runtime.labels))
        with pytest.raises(RuntimeUnavailable, match="stopping"):
            ours.containers.freeze(theirs)
    finally:
        runtime.containers.remove(theirs)


def _pairs(labels: dict[str, str]) -> list[str]:
    return [f"{k}={v}" for k, v in labels.items()]


def test_what_a_killed_verify_left_is_removed_by_gc_and_nothing_else(
    runtime: DockerRuntime, tmp_path: Path
) -> None:
    # Given a sealed verify killed with SIGKILL (nothing of its own can run), its paused
    # agent container, verifier and services network left on the daemon
    token, label, env = labelled_env(runtime)
    proc = subprocess.Popen(
        [sys.executable, "-c", CLI, "verify", str(slow_compose_task(tmp_path)), "--solution"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_sealed_verifier(runtime, label)
    finally:
        proc.kill()
        proc.wait()
    left = {c.name for c in runtime.docker.containers_labelled(label)}
    assert len(left) >= 3 and runtime.docker.networks_labelled(label)
    # and beside it a container that is not cleanroom's
    stranger = runtime.docker.client.containers.run(
        "cleanroom/base:bookworm", ["sleep", "300"], detach=True, labels={"not": token}
    )
    try:
        # When gc runs
        done = subprocess.run(
            [sys.executable, "-c", CLI, "gc", "--json"],
            capture_output=True,
            text=True,
            timeout=300,
        )

        # Then what the killed verify made is gone, and said so; the stranger is untouched
        assert done.returncode == 0, done.stderr
        removed = json.loads(done.stdout)["verifications"]["removed"]
        assert {f"container {name}" for name in left} <= set(removed), removed
        assert runtime.docker.containers_labelled(label) == []
        assert runtime.docker.networks_labelled(label) == []
        stranger.reload()
        assert stranger.status == "running"
    finally:
        stranger.remove(force=True)
