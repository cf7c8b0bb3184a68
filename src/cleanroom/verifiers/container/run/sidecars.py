"""A rollout's compose services: started beside the agent's container, removed at the end.

What ``docker compose up --wait`` does for Harbor, through cleanroom's Docker layer: a
network of the rollout's own, each service started on it under its name once its
``depends_on`` conditions hold (started, or healthy), then every service running and
healthy where it has a healthcheck before the agent's container starts. The network is
internal (nothing beyond it is reachable); when the task's environment has a network,
every service and ``main`` are on the default bridge as well, as in Harbor. Whatever was
created is recorded as soon as it exists, so `SidecarGroup.remove` leaves nothing behind
after a failure half-way.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping

from cleanroom.lifecycle import wait_until
from cleanroom.verifiers.container.runtime import (
    RuntimeUnavailable,
    ServiceState,
    VerificationRuntime,
)
from cleanroom.verifiers.container.task.compose_model import ComposeProject

_POLL_S = 0.25


class ServiceFailed(Exception):
    """A compose service did not start, or did not become healthy in time: the task's
    environment is at fault (``environment_error``), never the agent."""


class SidecarGroup:
    """The compose services of one rollout: their network and containers."""

    def __init__(
        self, runtime: VerificationRuntime, compose: ComposeProject, name_hint: str
    ) -> None:
        self.rt = runtime
        self.compose = compose
        self.name_hint = name_hint
        self.network: str | None = None
        self.containers: dict[str, str] = {}
        # Whether the containers are this group's to remove, or another harness's.
        self.owned = True

    @classmethod
    def of_another_harness(
        cls, runtime: VerificationRuntime, compose: ComposeProject, name_hint: str
    ) -> SidecarGroup:
        """A group for services another harness started: `join` attaches them to a
        network of the group's own, and `remove` detaches them and leaves them running."""
        group = cls(runtime, compose, name_hint)
        group.owned = False
        return group

    def join(self, running: Mapping[str, str]) -> None:
        """Attach the task's services among ``running`` (container by service name) to a
        network of this group's own, under their names."""
        self.network = self.rt.networks.create(self.name_hint)
        for service in self.compose.services:
            if service.name in running:
                self.containers[service.name] = running[service.name]
                self.rt.networks.join(self.network, running[service.name], service)

    def start(self, images: Mapping[str, str], public: bool, timeout_s: float) -> None:
        """Start every service (``images`` by service name) in dependency order and wait
        until all are ready; `ServiceFailed` names the service that is not."""
        deadline = time.monotonic() + timeout_s
        self.network = self.rt.networks.create(self.name_hint)
        for service in self.compose.services:
            for dependency, condition in service.depends_on:
                self._wait(dependency, condition, deadline, f"{service.name} depends on it")
            self.containers[service.name] = self.rt.containers.start_service(
                service, images[service.name], self.network, public
            )
        # ``up --wait``: every service running, and healthy where it has a healthcheck.
        for service in self.compose.services:
            self._wait(service.name, "ready", deadline, "before the agent phase")

    def wait_for_main(self, timeout_s: float) -> None:
        """``main``'s own ``depends_on`` conditions (already met by `start`'s wait, which
        covers every service; checked again so a service that died since is named)."""
        deadline = time.monotonic() + timeout_s
        for dependency, condition in self.compose.main_depends_on:
            self._wait(dependency, condition, deadline, "main depends on it")

    def remove(self) -> None:
        """Remove every service's container (detach it, when another harness owns it)
        and then the network; what is already gone is fine, and one failure does not
        stop the rest."""
        for container in self.containers.values():
            with contextlib.suppress(RuntimeUnavailable):
                if self.owned:
                    self.rt.containers.remove(container)
                elif self.network is not None:
                    self.rt.networks.leave(self.network, container)
        if self.network is not None:
            with contextlib.suppress(RuntimeUnavailable):
                self.rt.networks.remove(self.network)

    def _wait(self, name: str, condition: str, deadline: float, why: str) -> None:
        """Wait for ``condition`` (``service_started``, ``service_healthy``, or
        ``ready``: running, and healthy if it has a healthcheck) on service ``name``."""
        container = self.containers[name]

        def met() -> bool:
            state = self.rt.containers.state(container)
            problem = _problem(state, condition)
            if problem:
                raise ServiceFailed(self._describe(name, problem, why))
            return _met(state, condition)

        if not wait_until(met, max(0.0, deadline - time.monotonic()), _POLL_S):
            state = self.rt.containers.state(container)
            waited = f"was still {state.health or state.status} at the start time limit"
            raise ServiceFailed(self._describe(name, waited, why))

    def _describe(self, name: str, problem: str, why: str) -> str:
        try:
            tail = self.rt.containers.logs_tail(self.containers[name]).strip()
        except RuntimeUnavailable:
            tail = ""
        logs = f"; its last output: {tail[-600:]}" if tail else ""
        return f"compose service {name!r} ({why}) {problem}{logs}"


def _problem(state: ServiceState, condition: str) -> str:
    """Why a service can no longer meet ``condition``, or "" while it still may."""
    if state.status in ("exited", "dead"):
        return f"exited with code {state.exit_code}"
    if condition == "service_started":
        return ""
    if condition == "service_healthy" and state.status == "running" and state.health is None:
        return "has no healthcheck, which its service_healthy condition needs"
    if state.health == "unhealthy":
        return "is unhealthy"
    return ""


def _met(state: ServiceState, condition: str) -> bool:
    if state.status != "running":
        return False
    if condition == "service_started":
        return True
    if condition == "service_healthy":
        return state.health == "healthy"
    return state.health in (None, "healthy")
