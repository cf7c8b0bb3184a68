"""The three smoke rollouts through the CLI against a supervised pool, and the env: guest."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from cleanroom.environments.errors import CanaryIsReadOnly, StaleGeneration
from cleanroom.environments.pool.supervisor import PoolProcess

REPO = Path(__file__).resolve().parents[3]
CLEANROOM = REPO / ".venv" / "bin" / "cleanroom"
RENAME = REPO / "tests/data/osworld/tasks/os/e0df059f-28a6-4169-924f-b9623e7184cc.json"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CLEANROOM), *args], capture_output=True, text=True, timeout=240, check=False
    )


@pytest.mark.slow
@pytest.mark.browser
# The demo's window runs each task's scripted rollout in every `make test`; rename's here.
@pytest.mark.parametrize(
    "task",
    ["rename", *(pytest.param(t, marks=pytest.mark.integrations) for t in ("writer", "form"))],
)
def test_the_scripted_policy_succeeds(supervised: PoolProcess, task: str) -> None:
    proc = cli("rollout", "--task", task, "--env", "env01", "--run", str(supervised.run_dir))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "success" in proc.stdout


@pytest.mark.slow
@pytest.mark.browser
# The demo's idle rename and form rollouts fail in every run; writer's here.
@pytest.mark.parametrize(
    "task",
    ["writer", *(pytest.param(t, marks=pytest.mark.integrations) for t in ("rename", "form"))],
)
def test_a_policy_that_does_nothing_fails(supervised: PoolProcess, task: str) -> None:
    args = ("rollout", "--task", task, "--env", "env01", "--run", str(supervised.run_dir))
    proc = cli(*args, "--do-nothing")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "failure" in proc.stdout


def test_over_http_a_stale_generation_is_refused_and_the_canary_is_read_only(
    supervised: PoolProcess,
) -> None:
    client = supervised.client()
    try:
        handle = client.handle("env01")
        handle.generation -= 1 if handle.generation else -1
        with pytest.raises(StaleGeneration):
            handle.move(1, 1)
        with pytest.raises(CanaryIsReadOnly):
            client.handle("env00").type_text("x")
    finally:
        client.close()


def test_status_lists_every_environment_with_its_programs(supervised: PoolProcess) -> None:
    proc = cli("envs", "status", "--run", str(supervised.run_dir), "--json")
    assert proc.returncode == 0, proc.stderr
    assert '"env00"' in proc.stdout and '"writer"' in proc.stdout


def test_the_osworld_checker_runs_in_an_environment_through_the_env_guest(
    supervised: PoolProcess,
) -> None:
    proc = subprocess.run(
        [str(CLEANROOM), "osworld", "check", str(RENAME), "--guest", "env:env01", "--setup"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**__import__("os").environ, "CLEANROOM_RUN": str(supervised.run_dir)},
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr  # set up, not renamed: failure
