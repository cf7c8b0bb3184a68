"""The policy API answers nobody without a key, and an environment's key opens only that
environment's observe and act routes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from cleanroom.environments.memory import MemoryDesktops
from cleanroom.environments.policy.http import KEY_HEADER, build_app, env_key

KEY = "harness-key"


@pytest.fixture
def http(tmp_path: Path) -> Iterator[TestClient]:
    pool = MemoryDesktops(tmp_path, envs=2)
    pool.start()
    yield TestClient(build_app(pool, KEY, lambda: None))
    pool.stop()


def _as(key: str | None) -> dict[str, str]:
    return {KEY_HEADER: f"Bearer {key}"} if key else {}


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/v1/envs"),
        ("GET", "/v1/envs/env02/windows?generation=0"),
        ("POST", "/v1/envs/env02/act"),
        ("POST", "/v1/envs/env02/reset"),
        ("GET", "/v1/admin/status"),
        ("POST", "/v1/admin/open_url"),
        ("POST", "/v1/admin/shutdown"),
    ],
)
def test_every_route_refuses_no_key_and_another_environments_key(
    http: TestClient, method: str, path: str
) -> None:
    assert http.request(method, path, json={}).status_code == 401
    assert (
        http.request(method, path, json={}, headers=_as(env_key(KEY, "env01"))).status_code == 401
    )


def test_an_environments_key_opens_its_own_observe_route_and_the_harness_key_all(
    http: TestClient,
) -> None:
    own = http.get("/v1/envs/env01/state?generation=0", headers=_as(env_key(KEY, "env01")))
    assert own.status_code == 200 and own.json()["env"] == "env01"
    assert http.get("/v1/envs", headers=_as(KEY)).status_code == 200
    assert http.get("/v1/admin/status", headers=_as(KEY)).status_code == 200
    assert http.get("/v1/envs/env02/windows?generation=0", headers=_as(KEY)).status_code == 200
