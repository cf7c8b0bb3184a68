"""The host pool keeps the desktop contract (`tests/contract/desktops.py`) in both of its
providers: each environment in a sandbox, and its programs in a container of their own.

One pool per provider, the canary and one acting environment running Writer and the
terminal, started once for the whole suite of contracts.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cleanroom.environments.interface import Desktops
from cleanroom.environments.providers import PoolConfig, open_pool

from ...contract.desktops import Contract, cases
from .conftest import require_desktop_stack
from .test_containers_mode import require_docker

PROGRAMS = ("writer", "terminal")
# What a pool of Writer and the terminal needs of the host (no browser).
STACK = ("Xvfb", "xauth", "dbus-daemon", "soffice", "xterm", "useradd")
CONFIGS = {
    "sandbox": PoolConfig(envs=1, programs=PROGRAMS),
    "containers": PoolConfig(envs=1, programs=PROGRAMS, containers=True),
}


@pytest.fixture(
    scope="module",
    params=[
        pytest.param("sandbox"),
        # Containers mode keeps the contract in `make test-integrations`; its own
        # module (test_containers_mode.py) runs in every `make test`.
        pytest.param("containers", marks=[pytest.mark.docker, pytest.mark.integrations]),
    ],
)
def desktops(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Desktops]:
    """A started pool of one provider, stopped after the last contract."""
    provider: str = request.param
    require_desktop_stack(STACK)
    if provider == "containers":
        require_docker().close()
    pool = open_pool(CONFIGS[provider], tmp_path_factory.mktemp(f"{provider}-contract-run"))
    pool.start()
    try:
        yield pool
    finally:
        pool.stop()


@pytest.mark.parametrize("contract", cases())
def test_the_host_pool_keeps_the_contract(desktops: Desktops, contract: Contract) -> None:
    contract(desktops)
