"""Who broke an environment crosses the policy API intact: a stale generation says who
broke it, a broken environment is 410 with its record, and junk bodies stay errors."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient

from cleanroom.core.breakage import Breakage
from cleanroom.core.outcomes import Cause
from cleanroom.environments.errors import (
    DisplayHeld,
    EnvironmentBroken,
    PoolError,
    SelectionHeld,
    SelectionUnanswered,
    StaleGeneration,
)
from cleanroom.environments.policy.http import KEY_HEADER, PoolUnavailable, _raise_for, build_app

KEY = "harness-key"
BROKE = Breakage(Cause.AGENT, "its own processes ended what ran in it: writer is dead")


class _Pool:
    def __init__(self, error: PoolError) -> None:
        self.error = error

    def act(self, name: str, generation: int, action: Any) -> Any:
        raise self.error

    def observe(self, name: str, generation: int, what: str) -> Any:
        raise self.error


def _answer(error: PoolError) -> httpx.Response:
    http = TestClient(build_app(_Pool(error), KEY, lambda: None))  # type: ignore[arg-type]
    response = http.post(
        "/v1/envs/env01/act",
        json={"generation": 3, "action": {"kind": "type", "text": "x"}},
        headers={KEY_HEADER: f"Bearer {KEY}"},
    )
    return httpx.Response(response.status_code, content=response.content)


def test_a_stale_generation_carries_who_broke_it_to_the_client() -> None:
    response = _answer(StaleGeneration("env01", 3, 4, BROKE))
    assert response.status_code == 409
    with pytest.raises(StaleGeneration) as info:
        _raise_for(response)
    assert (info.value.aimed, info.value.current, info.value.left_by) == (3, 4, BROKE)


def test_a_plain_stale_generation_stays_plain() -> None:
    with pytest.raises(StaleGeneration) as info:
        _raise_for(_answer(StaleGeneration("env01", 3, 4)))
    assert info.value.left_by is None


@pytest.mark.parametrize("cause", list(Cause))
def test_a_broken_environment_is_410_with_its_record(cause: Cause) -> None:
    breakage = Breakage(cause, "display is dead")
    response = _answer(EnvironmentBroken("env01", 3, breakage))
    assert response.status_code == 410
    with pytest.raises(EnvironmentBroken) as info:
        _raise_for(response)
    assert (info.value.env, info.value.generation, info.value.breakage) == ("env01", 3, breakage)


@pytest.mark.parametrize(
    "body",
    [b"", b"[]", b'{"breakage": "agent"}', b'{"breakage": {"cause": "everyone", "why": 1}}'],
)
def test_a_410_without_a_record_is_no_breakage(body: bytes) -> None:
    with pytest.raises(PoolUnavailable):
        _raise_for(httpx.Response(410, content=body))


@pytest.mark.parametrize(
    "body", [b"", b"{}", b'{"aimed": "x", "current": null, "left_by": {"cause": 3}}']
)
def test_a_junk_409_is_still_a_stale_generation(body: bytes) -> None:
    with pytest.raises(StaleGeneration) as info:
        _raise_for(httpx.Response(409, content=body))
    assert info.value.left_by is None


def test_a_selection_its_own_program_keeps_silent_crosses_the_api_as_itself() -> None:
    response = _answer(SelectionUnanswered("env01", "CLIPBOARD", 0x600001))
    assert response.status_code == 423
    with pytest.raises(SelectionUnanswered) as info:
        _raise_for(response)
    assert (info.value.env, info.value.selection, info.value.owner) == (
        "env01",
        "CLIPBOARD",
        0x600001,
    )


def test_a_display_its_own_client_held_crosses_the_api_as_itself() -> None:
    response = _answer(DisplayHeld("env01", "a screenshot", 321, 20))
    assert response.status_code == 423
    with pytest.raises(DisplayHeld) as info:
        _raise_for(response)
    held = info.value
    assert not isinstance(held, SelectionUnanswered)
    assert (held.env, held.doing, held.server_pid, held.unread) == (
        "env01",
        "a screenshot",
        321,
        20,
    )


def test_a_selection_read_a_grab_held_crosses_the_api_as_both() -> None:
    with pytest.raises(SelectionHeld) as info:
        _raise_for(_answer(SelectionHeld("env01", "PRIMARY", None, None)))
    assert (info.value.env, info.value.selection, info.value.server_pid) == (
        "env01",
        "PRIMARY",
        None,
    )
