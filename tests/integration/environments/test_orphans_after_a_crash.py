"""A supervisor killed with SIGKILL leaves its users, homes, displays, programs and
containers behind; `cleanroom envs down --run` and `cleanroom envs gc` remove them all."""

from __future__ import annotations

import os
import pwd
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from cleanroom.environments.containers.program_container import POOL_LABEL
from cleanroom.environments.pool.pool_record import read_record
from cleanroom.environments.pool.supervisor import PoolProcess, read_state
from cleanroom.environments.session.processes import alive, pids_of_uid
from cleanroom.lifecycle import wait_until

from .conftest import require_desktop_stack
from .test_containers_mode import require_docker

pytestmark = pytest.mark.docker


@dataclass
class Crashed:
    """What a killed supervisor left, noted while it still ran."""

    run_dir: Path
    pool_id: str
    root: Path
    users: dict[str, int]
    display_pids: list[int]
    displays: list[str]
    program_pids: list[int]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    code = "import sys; from cleanroom.cli import main; sys.argv[0] = 'cleanroom'; main()"
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=180
    )


@pytest.fixture
def crashed(tmp_path: Path) -> Iterator[Crashed]:
    """A supervised pool in containers mode whose supervisor was killed with SIGKILL."""
    require_desktop_stack()
    require_docker().close()
    os.environ["CLEANROOM_POOL_POINTER"] = str(tmp_path / "pointer")
    proc = PoolProcess.start(tmp_path / "run", envs=1, programs=("terminal",), containers=True)
    client = proc.client()
    try:
        status = client.status()
    finally:
        client.close()
    state = read_state(proc.run_dir)
    envs = status["environments"]
    crashed = Crashed(
        run_dir=proc.run_dir,
        pool_id=state["pool_id"],
        root=Path(state["root"]),
        users={e["user"]: e["uid"] for e in envs},
        display_pids=[e["display_pid"] for e in envs],
        displays=[e["display"] for e in envs],
        program_pids=[p["pid"] for e in envs for p in e["programs"]],
    )
    os.kill(proc.pid, signal.SIGKILL)
    assert wait_until(lambda: not alive(proc.pid), 10)
    # The crash really left everything behind, or the test would prove nothing.
    assert all(alive(pid) for pid in crashed.display_pids + crashed.program_pids)
    assert len(_containers(crashed.pool_id)) == 2
    assert (crashed.root / "homes").is_dir()
    try:
        yield crashed
    finally:
        _cli("envs", "down", "--run", str(crashed.run_dir))  # whatever a failure left


def _containers(pool_id: str) -> list[str]:
    client = require_docker()
    try:
        found = client.containers.list(all=True, filters={"label": f"{POOL_LABEL}={pool_id}"})
        return [c.name for c in found]
    finally:
        client.close()


def _processes_naming(root: Path) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if str(root).encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def assert_nothing_left(c: Crashed) -> None:
    for user, uid in c.users.items():
        with pytest.raises(KeyError):
            pwd.getpwnam(user)
        assert wait_until(lambda uid=uid: pids_of_uid(uid) == [], 10), f"{user} still runs"
        assert not Path(f"/etc/sudoers.d/cleanroom-{user}").exists()
    assert not any(alive(pid) for pid in c.display_pids + c.program_pids)
    assert _processes_naming(c.root) == []
    for display in c.displays:
        assert not Path(f"/tmp/.X{display[1:]}-lock").exists()
        assert not Path(f"/tmp/.X11-unix/X{display[1:]}").exists()
    assert not c.root.exists(), "the pool's homes are still there"
    assert _containers(c.pool_id) == []
    assert read_record(c.pool_id) is None
    assert read_state(c.run_dir)["state"] == "stopped"


def test_down_removes_everything_a_killed_supervisor_left(crashed: Crashed) -> None:
    result = _cli("envs", "down", "--run", str(crashed.run_dir))
    assert result.returncode == 0, result.stderr
    assert "was dead" in result.stdout and crashed.pool_id in result.stdout
    assert_nothing_left(crashed)


def test_gc_finds_and_removes_the_orphans_of_a_dead_pool(crashed: Crashed) -> None:
    result = _cli("envs", "gc")
    assert result.returncode == 0, result.stderr
    reported = next(line for line in result.stdout.splitlines() if crashed.pool_id in line)
    # two environments' users and their display servers' own
    assert "4 user(s)" in reported and "2 container(s)" in reported
    assert_nothing_left(crashed)


def test_gc_leaves_a_live_pool_alone(supervised: PoolProcess) -> None:
    pool_id = read_state(supervised.run_dir)["pool_id"]
    result = _cli("envs", "gc")
    assert result.returncode == 0, result.stderr
    assert pool_id not in result.stdout
    client = supervised.client()
    try:
        assert all(e["healthy"] for e in client.status()["environments"])
    finally:
        client.close()
