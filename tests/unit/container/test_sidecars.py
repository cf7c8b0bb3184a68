"""Starting and removing a rollout's compose services, in order, against a recorded runtime:
what the group waits for, what it names when a service fails, and that removing it
leaves nothing it created (and removes nothing another harness owns)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cleanroom.verifiers.container.run.sidecars import ServiceFailed, SidecarGroup
from cleanroom.verifiers.container.runtime import ServiceState
from cleanroom.verifiers.container.task.compose import parse_compose

COMPOSE = parse_compose(
    """
services:
  main:
    depends_on: {api: {condition: service_healthy}}
  db:
    image: db
  api:
    image: api
    depends_on: {db: {condition: service_healthy}}
""",
    Path("/env/docker-compose.yaml"),
    {},
)


class RecordedRuntime:
    """The calls `SidecarGroup` makes, answered from ``states`` (service -> state); it
    serves as the runtime's containers and its networks."""

    def __init__(self, states: dict[str, ServiceState]) -> None:
        self.states = states
        self.calls: list[tuple[Any, ...]] = []
        self.by_id: dict[str, str] = {}
        self.containers = self
        self.networks = _Networks(self)

    def start_service(self, service: Any, image: str, network: str, public: bool) -> str:
        self.calls.append(("start", service.name, image, network, public))
        self.by_id[f"ctr-{service.name}"] = service.name
        return f"ctr-{service.name}"

    def state(self, container: str) -> ServiceState:
        return self.states[self.by_id.get(container, container)]

    def logs_tail(self, container: str, lines: int = 20) -> str:
        return "Traceback: boom"

    def remove(self, container: str) -> None:
        self.calls.append(("remove", container))


class _Networks:
    def __init__(self, rt: RecordedRuntime) -> None:
        self.rt = rt

    def create(self, name_hint: str) -> str:
        self.rt.calls.append(("network", name_hint))
        return "net-1"

    def join(self, network: str, container: str, service: Any) -> None:
        self.rt.calls.append(("join", network, container, service.name))

    def leave(self, network: str, container: str) -> None:
        self.rt.calls.append(("leave", network, container))

    def remove(self, network: str) -> None:
        self.rt.calls.append(("remove network", network))


HEALTHY = ServiceState("running", "healthy", None)
IMAGES = {"db": "db:1", "api": "api:1"}


def group(rt: RecordedRuntime) -> SidecarGroup:
    return SidecarGroup(rt, COMPOSE, "task")  # type: ignore[arg-type]


def test_services_start_in_order_once_their_dependencies_are_healthy() -> None:
    rt = RecordedRuntime({"db": HEALTHY, "api": HEALTHY})
    services = group(rt)
    services.start(IMAGES, public=False, timeout_s=5)
    services.wait_for_main(5)
    assert rt.calls == [
        ("network", "task"),
        ("start", "db", "db:1", "net-1", False),
        ("start", "api", "api:1", "net-1", False),
    ]
    assert services.containers == {"db": "ctr-db", "api": "ctr-api"}


@pytest.mark.parametrize(
    ("state", "words"),
    [
        (ServiceState("exited", None, 3), "exited with code 3"),
        (ServiceState("running", "unhealthy", None), "is unhealthy"),
        (ServiceState("running", None, None), "has no healthcheck"),
    ],
)
def test_a_dependency_that_cannot_become_healthy_is_named_and_nothing_is_left(
    state: ServiceState, words: str
) -> None:
    rt = RecordedRuntime({"db": state, "api": HEALTHY})
    services = group(rt)
    with pytest.raises(ServiceFailed) as caught:
        services.start(IMAGES, public=False, timeout_s=5)
    assert str(caught.value).startswith("compose service 'db' (api depends on it)")
    assert words in str(caught.value) and "Traceback: boom" in str(caught.value)
    services.remove()
    assert rt.calls[-2:] == [("remove", "ctr-db"), ("remove network", "net-1")]
    assert not any(c[:2] == ("start", "api") for c in rt.calls)


def test_a_service_still_starting_at_the_limit_is_named() -> None:
    rt = RecordedRuntime({"db": ServiceState("running", "starting", None), "api": HEALTHY})
    with pytest.raises(ServiceFailed, match="still starting at the start time limit"):
        group(rt).start(IMAGES, public=True, timeout_s=0.3)


def test_services_another_harness_started_are_joined_and_left_running() -> None:
    rt = RecordedRuntime({})
    services = SidecarGroup.of_another_harness(rt, COMPOSE, "task")  # type: ignore[arg-type]
    services.join({"db": "h-db", "api": "h-api", "x": "h-x"})
    services.remove()
    assert rt.calls == [
        ("network", "task"),
        ("join", "net-1", "h-db", "db"),
        ("join", "net-1", "h-api", "api"),
        ("leave", "net-1", "h-db"),
        ("leave", "net-1", "h-api"),
        ("remove network", "net-1"),
    ]
