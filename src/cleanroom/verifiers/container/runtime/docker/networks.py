"""Networks on a Docker daemon for a task's compose services: internal (the services
and the task's containers, nothing beyond), one per rollout."""

from __future__ import annotations

import secrets
from collections.abc import Mapping

from cleanroom.docker_layer import Docker
from cleanroom.verifiers.container.runtime.docker.containers import names_of
from cleanroom.verifiers.container.runtime.docker.made import MadeByRuntime
from cleanroom.verifiers.container.runtime.docker.tar import safe_name
from cleanroom.verifiers.container.task.compose_model import Service


class DockerNetworks:
    """The services' networks of one Docker connection."""

    def __init__(
        self, docker: Docker, labels: Mapping[str, str], made: MadeByRuntime | None = None
    ) -> None:
        self.docker = docker
        self.labels = dict(labels)
        self.made = made or MadeByRuntime()

    def create(self, name_hint: str) -> str:
        """A fresh internal network for one rollout's compose services: they reach each
        other (and ``main``) by name, and nothing beyond it. Returns its id."""
        name = f"cleanroom-{safe_name(name_hint)}-{secrets.token_hex(4)}"
        with self.made.making(f"creating network {name}"):
            network = self.docker.create_network(name, internal=True, labels=self.labels)
            self.made.network(network)
        return network

    def join(self, network: str, container: str, service: Service) -> None:
        """Attach the running container of ``service``, which another harness started, to
        ``network`` under the service's names."""
        self.docker.connect_network(network, container, names_of(service))

    def leave(self, network: str, container: str) -> None:
        """Detach it again, leaving the container to its owner."""
        self.docker.disconnect_network(network, container)

    def remove(self, network: str) -> None:
        """Remove a network (its containers removed first); missing is fine."""
        self.docker.remove_network(network)
        self.made.removed_network(network)
