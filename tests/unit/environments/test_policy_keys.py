"""The policy API answers nobody without a key, and an environment's key opens only that
environment's observe and act routes."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from starlette.testclient import TestClient

from cleanroom.environments.interface import EnvironmentState, ScreenSize
from cleanroom.environments.policy.http import KEY_HEADER, build_app, env_key

KEY = "harness-key"


class _Pool:
    """Just enough of a pool for the routes to answer once authorised."""

    book = SimpleNamespace(snapshot=lambda: {"env01": 1, "env02": 1})

    def observe(self, name: str, generation: int, kind: type) -> Any:
        return EnvironmentState(name, generation, False, (), ScreenSize())

    def describe(self) -> dict[str, Any]:
        return {"environments": []}


@pytest.fixture
def http() -> TestClient:
    return TestClient(build_app(_Pool(), KEY, lambda: None))  # type: ignore[arg-type]


def _as(key: str | None) -> dict[str, str]:
    return {KEY_HEADER: f"Bearer {key}"} if key else {}


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/v1/envs"),
        ("GET", "/v1/envs/env02/windows?generation=1"),
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
    own = http.get("/v1/envs/env01/state?generation=1", headers=_as(env_key(KEY, "env01")))
    assert own.status_code == 200 and own.json()["env"] == "env01"
    assert http.get("/v1/envs", headers=_as(KEY)).status_code == 200
    assert http.get("/v1/admin/status", headers=_as(KEY)).status_code == 200
    assert http.get("/v1/envs/env02/windows?generation=1", headers=_as(KEY)).status_code == 200
