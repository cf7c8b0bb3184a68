"""The verification runtime on a Docker daemon this machine reaches: the fast path,
where the daemon's own pause, diff, archive and network calls do each job.

Each failure of the daemon or the API surfaces as `RuntimeUnavailable` saying what was
being done, so the run can turn it into `invalid` (`verifier_unavailable`) instead of a
score; an image that does not build is `ImageBuildFailed` with its log. Everything this
runtime creates carries the ``cleanroom.verify`` label plus any labels the caller adds
(tests add ``cleanroom.test``), so it can be found and removed by label.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from cleanroom.docker_layer import Docker
from cleanroom.verifiers.container.runtime.capabilities import FULL
from cleanroom.verifiers.container.runtime.docker.containers import DockerContainers
from cleanroom.verifiers.container.runtime.docker.files import DockerFiles
from cleanroom.verifiers.container.runtime.docker.images import DockerImages
from cleanroom.verifiers.container.runtime.docker.networks import DockerNetworks
from cleanroom.verifiers.container.runtime.docker.state import DockerStateTransfer
from cleanroom.verifiers.container.runtime.records import RuntimeUnavailable

LABEL = "cleanroom.verify"
LABELS_ENV = "CLEANROOM_LABELS"  # extra labels, "key=value,key=value", for a whole process

__all__ = ["LABEL", "LABELS_ENV", "DockerRuntime", "labels_from_env"]


class DockerRuntime:
    """`VerificationRuntime` on one Docker connection, by resource."""

    capabilities = FULL

    def __init__(self, docker: Docker, labels: Mapping[str, str] | None = None):
        self.docker = docker
        self.labels = {LABEL: "1", **(labels or {})}
        self.images = DockerImages(docker, self.labels)
        self.containers = DockerContainers(docker, self.labels, self.images)
        self.files = DockerFiles(docker)
        self.state = DockerStateTransfer(docker)
        self.networks = DockerNetworks(docker, self.labels)

    @classmethod
    def connect(
        cls, labels: Mapping[str, str] | None = None, *, host: str | None = None
    ) -> DockerRuntime:
        """Connect to the daemon at ``host``, else the one the environment names
        (``DOCKER_HOST`` or the local socket): Docker, or podman's compatible API.

        Labels listed in ``CLEANROOM_LABELS`` are added to everything this runtime
        creates, so a caller can find and remove what a child process built.
        """
        docker = Docker.connect(timeout=300, max_pool_size=32, error=RuntimeUnavailable, host=host)
        return cls(docker, {**labels_from_env(), **(labels or {})})

    def remove_labelled(self, labels: Mapping[str, str], *, images: bool = True) -> int:
        """Remove every container, then every network and (unless ``images`` is false)
        every image, carrying all of ``labels``."""
        wanted = [f"{k}={v}" for k, v in labels.items()]
        removed = 0
        for c in self.docker.containers_labelled(*wanted):
            self.containers.remove(c.id)
            removed += 1
        for network in self.docker.networks_labelled(*wanted):
            self.networks.remove(network)
            removed += 1
        if not images:
            return removed
        for image in self.docker.images_labelled(*wanted):
            self.images.remove(image)
            removed += 1
        return removed


def labels_from_env() -> dict[str, str]:
    """The labels in ``CLEANROOM_LABELS`` (``key=value`` pairs separated by commas)."""
    pairs = (item.partition("=") for item in os.environ.get(LABELS_ENV, "").split(","))
    return {k.strip(): v.strip() for k, sep, v in pairs if sep and k.strip()}
