"""The in-memory provider keeps the desktop contract (`tests/contract/desktops.py`), so
a check's trial or a control unit-tested on it runs against the interface the host pool
keeps too."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cleanroom.environments.interface import Desktops
from cleanroom.environments.memory import MemoryDesktops

from ...contract.desktops import Contract, cases


@pytest.fixture
def desktops(tmp_path: Path) -> Iterator[Desktops]:
    pool = MemoryDesktops(tmp_path / "run", envs=1, programs=("writer", "terminal"))
    pool.start()
    try:
        yield pool
    finally:
        pool.stop()


@pytest.mark.parametrize("contract", cases())
def test_the_in_memory_provider_keeps_the_contract(desktops: Desktops, contract: Contract) -> None:
    contract(desktops)
