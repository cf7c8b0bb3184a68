"""`cleanroom envs up --leaky KIND` starts a real leaky pool that `envs status` names as
leaky, whose leak is real, and which `envs down` removes completely."""

from __future__ import annotations

import json
import os
import pwd
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cleanroom.core.tokens import RolloutId, mint
from cleanroom.environments.pool.pool_record import read_record
from cleanroom.environments.pool.supervisor import PoolProcess, read_state
from cleanroom.environments.session.processes import alive, pids_of_uid
from cleanroom.lifecycle import wait_until

from .conftest import require_desktop_stack

# A pool of its own through the CLI, judging no timing between environments: beside the
# desktop group (tests/conftest.py).
pytestmark = [pytest.mark.slow, pytest.mark.beside_desktops]


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    code = "import sys; from cleanroom.cli import main; sys.argv[0] = 'cleanroom'; main()"
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300, env=env
    )


@pytest.fixture(scope="module")
def cli_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The process environment for the CLI, with a pool pointer of this test's own."""
    pointer = tmp_path_factory.mktemp("pointer") / "current-pool"
    return {**os.environ, "CLEANROOM_POOL_POINTER": str(pointer), "COLUMNS": "200"}


@pytest.fixture(scope="module")
def leaky_pool(
    tmp_path_factory: pytest.TempPathFactory, cli_env: dict[str, str]
) -> Iterator[tuple[Path, dict[str, Any]]]:
    """A pool started by `envs up --leaky shared-clipboard`, and its status."""
    require_desktop_stack()
    run_dir = tmp_path_factory.mktemp("leaky-cli") / "run"
    up = _cli(
        cli_env, "envs", "up", "--envs", "2", "--programs", "terminal",
        "--leaky", "shared-clipboard", "--run", str(run_dir),
    )  # fmt: skip
    assert up.returncode == 0, up.stderr + up.stdout
    assert "LEAKY pool (shared-clipboard)" in up.stdout
    # The start says each environment as it comes up, on stderr, before the pool is ready.
    ready = [ln.split(": ", 1)[1] for ln in up.stderr.splitlines() if " ready (" in ln]
    assert sorted(r.split()[0] for r in ready) == ["env00", "env01", "env02"], up.stderr
    assert [r.split(" ", 1)[1] for r in ready] == [f"ready ({n} of 3)" for n in (1, 2, 3)]
    try:
        status = _cli(cli_env, "envs", "status", "--json", "--run", str(run_dir))
        assert status.returncode == 0, status.stderr
        yield run_dir, json.loads(status.stdout)
    finally:
        _cli(cli_env, "envs", "down", "--run", str(run_dir))  # whatever a failure left


def test_status_names_the_leak(
    leaky_pool: tuple[Path, dict[str, Any]], cli_env: dict[str, str]
) -> None:
    run_dir, status = leaky_pool
    assert status["leak"] == "shared-clipboard"
    assert read_state(run_dir)["leak"] == "shared-clipboard"
    table = _cli(cli_env, "envs", "status", "--run", str(run_dir))
    assert "LEAKY: shared-clipboard" in table.stdout


def test_a_value_set_on_env01_is_readable_on_env02(
    leaky_pool: tuple[Path, dict[str, Any]],
) -> None:
    run_dir, _ = leaky_pool
    client = PoolProcess.connect(run_dir).client()
    try:
        secret = f"bridged {mint(RolloutId('env01', 1, 7))}"
        client.handle("env01").set_clipboard(secret)
        assert wait_until(lambda: client.handle("env02").get_clipboard() == secret, 10, 0.2)
    finally:
        client.close()


def test_an_unknown_leak_kind_is_refused_before_anything_starts(
    cli_env: dict[str, str], tmp_path: Path
) -> None:
    up = _cli(cli_env, "envs", "up", "--leaky", "shared-kitchen", "--run", str(tmp_path / "r"))
    assert up.returncode == 2
    assert "unknown leak" in up.stderr
    assert not (tmp_path / "r").exists()


def test_down_leaves_nothing_behind(
    leaky_pool: tuple[Path, dict[str, Any]], cli_env: dict[str, str]
) -> None:
    run_dir, status = leaky_pool
    state = read_state(run_dir)
    envs = status["environments"]
    down = _cli(cli_env, "envs", "down", "--run", str(run_dir))
    assert down.returncode == 0, down.stderr
    assert wait_until(lambda: not alive(int(state["pid"])), 30, 0.2)
    for e in envs:
        with pytest.raises(KeyError):
            pwd.getpwnam(e["user"])
        assert wait_until(lambda uid=e["uid"]: pids_of_uid(uid) == [], 10, 0.2)
        assert not alive(e["display_pid"])
        assert not any(alive(p["pid"]) for p in e["programs"])
        assert not Path(f"/tmp/.X11-unix/X{e['display'][1:]}").exists()
    # The clipboard bridge ran inside the supervisor, which is gone; its root is too.
    assert not Path(state["root"]).exists()
    assert read_record(state["pool_id"]) is None
    assert read_state(run_dir)["state"] == "stopped"
