"""A kernel per environment: the same sandbox spec for ``runsc``, its display socket
through a folder, and the pool's ``gvisor`` provider."""

from __future__ import annotations

from pathlib import Path

import pytest

from cleanroom.environments.pool.plan import PoolConfig, PoolPlan
from cleanroom.environments.session.sandbox_spec import (
    X_SOCKET_DIR,
    SandboxLayout,
    SandboxProtections,
    SandboxRuntime,
    runtime_config,
)

LAYOUT = SandboxLayout(
    writable=(Path("/pools/p/homes/env01"),), hidden=(Path("/pools/p/homes"),), display_number=7
)


def _mounts(socket_folder: Path | None) -> dict[str, dict]:
    config = runtime_config(
        root=Path("/stage/root"),
        hostname="h",
        layout=LAYOUT,
        protections=SandboxProtections(),
        cgroup="cleanroom/x",
        socket_folder=socket_folder,
    )
    return {m["destination"]: m for m in config["mounts"]}


def test_the_display_socket_is_bound_alone_by_default() -> None:
    mounts = _mounts(None)
    assert mounts[str(X_SOCKET_DIR / "X7")]["source"] == str(X_SOCKET_DIR / "X7")
    assert str(X_SOCKET_DIR) not in mounts


def test_with_a_socket_folder_that_folder_is_the_sandboxs_socket_folder() -> None:
    mounts = _mounts(Path("/stage/mnt/x11"))
    assert mounts[str(X_SOCKET_DIR)]["source"] == "/stage/mnt/x11"
    assert "rw" in mounts[str(X_SOCKET_DIR)]["options"]
    assert str(X_SOCKET_DIR / "X7") not in mounts


def test_sandboxes_run_on_runc_unless_asked() -> None:
    assert SandboxProtections().runtime == SandboxRuntime.RUNC
    assert SandboxProtections().describe()["runtime"] == "runc"


def test_a_gvisor_pool_gives_every_sandbox_runsc_and_names_its_provider() -> None:
    config = PoolConfig(envs=1, gvisor=True)
    plan = PoolPlan(config, "abc123", Path("/runs/r"))
    assert {plan.spec(n).protections.runtime for n in plan.names} == {SandboxRuntime.RUNSC}
    assert config.provider == "gvisor"
    assert not config.capabilities.open_url


def test_a_default_pool_keeps_runc() -> None:
    plan = PoolPlan(PoolConfig(envs=1), "abc123", Path("/runs/r"))
    assert {plan.spec(n).protections.runtime for n in plan.names} == {SandboxRuntime.RUNC}


def test_gvisor_and_containers_mode_together_are_refused() -> None:
    with pytest.raises(ValueError, match="gVisor"):
        PoolConfig(envs=1, gvisor=True, containers=True)
