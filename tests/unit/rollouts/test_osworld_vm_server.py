"""The equivalent of OSWorld's in-VM server: an agent's unchanged ``http://{vm_ip}:5000``
URL, sent by ``requests`` as OSWorld's controller sends it, opens its own environment's
routes and no other's. The controller behind it is a recording stand-in: what it does
inside an environment is the integration tests' (test_osworld_runner)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

import pytest
import requests

from cleanroom.rollouts.osworld_controller import EnvironmentController
from cleanroom.rollouts.osworld_vm_server import build_vm_server_app, serving_vm_server, vm_ip

KEY = "harness-key"


class StandIn:
    """Answers as `EnvironmentController` answers, and keeps what it was asked."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.asked: list[tuple[str, Any]] = []

    def get_screenshot(self) -> bytes:
        return b"\x89PNG" + self.name.encode()

    def execute(self, command: Any, *, shell: bool = False) -> dict[str, Any]:
        self.asked.append(("execute", (command, shell)))
        return {"status": "success", "output": self.name, "error": "", "returncode": 0}

    def get_file(self, path: str) -> bytes | None:
        self.asked.append(("file", path))
        return b"data" if path == "/home/u/a.txt" else None

    def get_vm_screen_size(self) -> dict[str, int]:
        return {"width": 1920, "height": 1080}


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[str, dict[str, StandIn]]]:
    stand_ins = {name: StandIn(name) for name in ("env01", "env02")}
    app = build_vm_server_app(cast(dict[str, EnvironmentController], stand_ins).get, KEY)
    with serving_vm_server(app) as address:
        yield address, stand_ins


def _session() -> requests.Session:
    session = requests.Session()
    session.trust_env = False  # the loopback server, never through a proxy
    return session


def test_an_agents_url_from_vm_ip_reaches_its_own_environment(served: Any) -> None:
    address, _ = served
    url = f"http://{vm_ip('env02', KEY, address)}:5000"
    with _session() as http:
        assert http.get(f"{url}/screenshot").content == b"\x89PNGenv02"
        assert http.post(f"{url}/screen_size").json() == {"width": 1920, "height": 1080}


def test_execute_takes_osworlds_json_body(served: Any) -> None:
    address, stand_ins = served
    url = f"http://{vm_ip('env01', KEY, address)}:5000"
    with _session() as http:
        answer = http.post(
            f"{url}/execute",
            headers={"Content-Type": "application/json"},
            data='{"command": ["python", "-c", "print(1)"], "shell": false}',
        ).json()
    assert answer["output"] == "env01" and answer["returncode"] == 0
    assert stand_ins["env01"].asked[-1] == ("execute", (["python", "-c", "print(1)"], False))


def test_file_takes_osworlds_form_body_and_a_missing_file_is_404(served: Any) -> None:
    address, _ = served
    url = f"http://{vm_ip('env01', KEY, address)}:5000"
    with _session() as http:
        assert http.post(f"{url}/file", data={"file_path": "/home/u/a.txt"}).content == b"data"
        assert http.post(f"{url}/file", data={"file_path": "/nothing"}).status_code == 404


def test_another_environments_key_does_not_open_an_environment(served: Any) -> None:
    address, _ = served
    env02_key = vm_ip("env02", KEY, address).split("@")[0].split(":")[1]
    with _session() as http:
        response = http.get(f"http://env01:{env02_key}@{address}:5000/screenshot")
    assert response.status_code == 401


@pytest.mark.parametrize(
    "credentials",
    ["", "env01@", "env01:@", "env03:x@", "env01:harness-key@"],
    ids=["none", "no-key", "empty-key", "unknown-environment", "the-harness-key"],
)
def test_a_request_without_its_environments_own_key_is_401(served: Any, credentials: str) -> None:
    address, _ = served
    with _session() as http:
        assert http.get(f"http://{credentials}{address}:5000/screenshot").status_code == 401


def test_a_malformed_body_is_400(served: Any) -> None:
    address, _ = served
    url = f"http://{vm_ip('env01', KEY, address)}:5000"
    with _session() as http:
        response = http.post(
            f"{url}/execute", headers={"Content-Type": "application/json"}, data='{"command": 3}'
        )
    assert response.status_code == 400
