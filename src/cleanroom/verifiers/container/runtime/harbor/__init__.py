"""cleanroom's verification runtime on Harbor's own environment interface (needs
``cleanroom[harbor]``): the generic path, for every environment type Harbor offers.

It needs only what every Harbor environment has: ``exec`` as root, file upload and
download, a fresh environment of the same task from Harbor's factory, and ``stop(delete=
True)``. The sealed verification runs on it unchanged (`verifiers.container.run`): the
agent's processes are stopped, its changes listed against a fresh environment's listing,
its state paths archived, downloaded and checked, installed in a fresh environment with
fresh tests and a reward folder the agent never had, the tests run there, and the reward
brought back and read on the host by the same parser and decision code as on Docker.

Where Docker's daemon is on this machine, `runtime.docker.DockerRuntime` is the fast path
(pause, diff and archive calls, no command in the agent's container). Compose services,
a verifier in the agent's network namespace (``live_processes``) and ``shared``'s
in-container reader need that path: `HarborRuntime.capabilities` says so, and a run that
needs one is refused before it starts.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from cleanroom.core.errors import ExtraNotInstalledError

try:
    from harbor.environments.base import BaseEnvironment
    from harbor.environments.factory import EnvironmentFactory
    from harbor.models.environment_type import EnvironmentType
except ImportError as exc:  # imported only by a caller that has Harbor
    raise ExtraNotInstalledError(
        "the verification runtime on Harbor's environments", "harbor", exc.name or "harbor"
    ) from exc

from cleanroom.core.observed_file import ObservedFile
from cleanroom.verifiers.container.agent_state.links import Entry
from cleanroom.verifiers.container.runtime.capabilities import RuntimeCapabilities
from cleanroom.verifiers.container.runtime.harbor.bridge import Bridge
from cleanroom.verifiers.container.runtime.harbor.containers import HarborContainers, unavailable
from cleanroom.verifiers.container.runtime.harbor.environments import VERIFIER_SUFFIX, Environments
from cleanroom.verifiers.container.runtime.harbor.files import Transfer
from cleanroom.verifiers.container.runtime.harbor.state import HarborStateTransfer
from cleanroom.verifiers.container.task import Task
from cleanroom.verifiers.container.task.compose_model import Service

# The places listed whole (they may be mounts of their own): the tests' and the logs'.
WATCHED = ("/tests", "/logs")

__all__ = ["WATCHED", "HarborRuntime", "environment_class_of", "verifier_image"]


def verifier_image(task_dir: str) -> str:
    """The "image" that names the separate verifier's environment of a task."""
    return task_dir + VERIFIER_SUFFIX


def environment_class_of(kind: str) -> type[BaseEnvironment]:
    """The class of Harbor's environments of type ``kind``, as its factory loads it."""
    return EnvironmentFactory.get_environment_class(EnvironmentType(kind))


class HarborImages:
    """A task's "image" here is its folder: Harbor builds or pulls what it names."""

    def __init__(self, containers: HarborContainers) -> None:
        self._containers = containers

    def for_task(self, task: Task, image_map: Mapping[str, str]) -> tuple[str, bool]:
        return str(task.root), False

    def for_verifier(self, task: Task, image_map: Mapping[str, str]) -> tuple[str, bool]:
        """A separate verifier's environment, as Harbor resolves it."""
        return verifier_image(str(task.root)), False

    def for_service(self, task: Task, service: Service, image_map: Mapping[str, str]) -> str:
        raise unavailable(f"compose service {service.name!r}")

    def workdir(self, image: str) -> str | None:
        return self._containers.workdir(image)


class HarborFiles:
    """`Files` on Harbor environments: brought to the host and read there."""

    def __init__(self, environments: Environments, transfer: Transfer) -> None:
        self._environments = environments
        self._transfer = transfer

    def read(self, container: str, path: str, cap: int) -> ObservedFile:
        return self._transfer.read(self._environments.get(container), path, cap)

    def read_with_programs(self, container: str, path: str, cap: int) -> ObservedFile:
        raise unavailable("reading with the container's own programs (shared's control)")

    def entries(self, container: str, paths: Sequence[str]) -> dict[str, Entry]:
        return self._transfer.entries(self._environments.get(container), paths)


class HarborNetworks:
    """No networks: compose services beside the agent need the Docker path."""

    def create(self, name_hint: str) -> str:
        raise unavailable("a network for compose services")

    def join(self, network: str, container: str, service: Service) -> None:
        raise unavailable("a network for compose services")

    def leave(self, network: str, container: str) -> None:
        raise unavailable("a network for compose services")

    def remove(self, network: str) -> None:
        """Nothing was made."""


class HarborRuntime:
    """`VerificationRuntime` on Harbor environments of one type, by resource.

    ``environment_class`` is the class of Harbor's environments to make (the agent's
    environment's own class, or `environment_class_of` a type: ``docker``, ``modal``,
    ``daytona``...) and ``options`` the keyword options they take. Calls run on ``loop`` (the
    harness's, when a Harbor verifier drives the verification from a worker thread) or on
    a loop of the runtime's own. `close` stops whatever fresh environment is left.
    """

    # Harbor's interface has no networks to share and no container of its own to read
    # with: what needs them needs a container daemon on this machine.
    capabilities = RuntimeCapabilities(
        compose_services=False, verifier_in_agent_network=False, container_programs_reader=False
    )

    def __init__(
        self,
        environment_class: type[BaseEnvironment],
        options: Mapping[str, Any] | None = None,
        *,
        loop: asyncio.AbstractEventLoop | None = None,
        watched: Sequence[str] = WATCHED,
        session_prefix: str = "cleanroom",
    ) -> None:
        self.bridge = Bridge(loop)
        self.environments = Environments(self.bridge, environment_class, options, session_prefix)
        self.environments.listing_variant = tuple(watched)
        transfer = Transfer(self.bridge, self.environments)
        self.state = HarborStateTransfer(self.environments, transfer, watched)
        self.containers = HarborContainers(self.environments, transfer, self.state)
        self.images = HarborImages(self.containers)
        self.files = HarborFiles(self.environments, transfer)
        self.networks = HarborNetworks()

    def adopt(self, env: BaseEnvironment, task_dir: str) -> str:
        """Know the harness's environment ``env`` (of the task in ``task_dir``) under an
        id the verification can name; it is never stopped here."""
        return self.environments.adopt(env, task_dir)

    def close(self) -> None:
        """Stop every fresh environment left, then the runtime's own loop."""
        try:
            self.containers.close()
            self.environments.close()
        finally:
            self.bridge.close()
