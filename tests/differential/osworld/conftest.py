"""Fixtures of the differential OSWorld tests (they run in .venv-osworld; elsewhere every
test module skips, and nothing here needs OSWorld's code)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .fake_vm import Sides
from .reference import Files


@pytest.fixture(scope="session")
def files(tmp_path_factory: pytest.TempPathFactory) -> Files:
    return Files(tmp_path_factory.mktemp("metric-files"))


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # The local servers must be reached directly, whatever proxy the machine names.
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    yield


@pytest.fixture(scope="module")
def sides(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sides]:
    both = Sides(tmp_path_factory.mktemp("getters"))
    yield both
    both.close()


@pytest.fixture
def fresh(sides: Sides) -> Sides:
    sides.reset()
    return sides
