"""The verification runtime on a Docker daemon this machine reaches: the fast path,
where the daemon's own pause, diff, archive and network calls do each job.

Each failure of the daemon or the API surfaces as `RuntimeUnavailable` saying what was
being done, so the run can turn it into `invalid` (`verifier_unavailable`) instead of a
score; an image that does not build is `ImageBuildFailed` with its log. Everything this
runtime creates carries the ``cleanroom.verify`` label plus any labels the caller adds
(tests add ``cleanroom.test``), so it can be found and removed by label. Each runtime
also knows what it made itself (`made`): a process stopped by a signal removes that, and
thaws what it froze (`stop_every_runtime`).
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
import time
import weakref
from collections.abc import Callable, Mapping

from cleanroom.docker_layer import Docker
from cleanroom.lifecycle import owner_token
from cleanroom.verifiers.container.runtime.capabilities import FULL
from cleanroom.verifiers.container.runtime.docker.containers import DockerContainers
from cleanroom.verifiers.container.runtime.docker.files import DockerFiles
from cleanroom.verifiers.container.runtime.docker.images import DockerImages
from cleanroom.verifiers.container.runtime.docker.made import Leftovers, MadeByRuntime
from cleanroom.verifiers.container.runtime.docker.networks import DockerNetworks
from cleanroom.verifiers.container.runtime.docker.state import DockerStateTransfer
from cleanroom.verifiers.container.runtime.records import RuntimeUnavailable

LABEL = "cleanroom.verify"
# The process that made a container or network (`lifecycle.owner_token`): what `gc`
# removes is what a process that has ended left.
OWNER_LABEL = "cleanroom.owner"
LABELS_ENV = "CLEANROOM_LABELS"  # extra labels, "key=value,key=value", for a whole process

# How long a stop waits for a container being started to be known, at most.
STOP_WAIT_S = 30.0

__all__ = [
    "LABEL",
    "LABELS_ENV",
    "OWNER_LABEL",
    "DockerRuntime",
    "labels_from_env",
    "stop_every_runtime",
]

# Every runtime of this process, for `stop_every_runtime`: a signal is the process's.
_RUNTIMES: weakref.WeakSet[DockerRuntime] = weakref.WeakSet()
_RUNTIMES_LOCK = threading.Lock()


class DockerRuntime:
    """`VerificationRuntime` on one Docker connection, by resource."""

    capabilities = FULL

    def __init__(self, docker: Docker, labels: Mapping[str, str] | None = None):
        self.docker = docker
        self.labels = {LABEL: "1", **(labels or {})}
        self.made = MadeByRuntime()
        self.images = DockerImages(docker, self.labels, self.made)
        # What lives only as long as a run carries the process that made it, for `gc`.
        owned = {**self.labels, OWNER_LABEL: owner_token()}
        self.containers = DockerContainers(docker, owned, self.images)
        self.files = DockerFiles(docker)
        self.state = DockerStateTransfer(docker)
        self.networks = DockerNetworks(docker, owned, self.made)
        with _RUNTIMES_LOCK:
            _RUNTIMES.add(self)

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

    def stop(self, wait_s: float = STOP_WAIT_S) -> Leftovers:
        """Make nothing more, and undo what this runtime did to the daemon: thaw each
        container it froze (one it did not make, another harness's, is left running),
        remove every container it made, then every network. Returns what it found."""
        left = self.made.stop(wait_s)
        for ctr in left.frozen:
            if ctr not in left.containers:
                with contextlib.suppress(RuntimeUnavailable):
                    self.docker.unpause(ctr)
        # The last made first: a live verifier depends on the agent's container. A run's
        # own teardown may be removing the same ones: each is tried until it is gone.
        for ctr in reversed(left.containers):
            _until_gone(functools.partial(self.docker.remove_container, ctr, volumes=True))
        for network in left.networks:
            _until_gone(functools.partial(self.docker.remove_network, network))
        return left


def _until_gone(remove: Callable[[], None], wait_s: float = 10.0) -> None:
    """``remove`` (missing is fine) tried again while the daemon refuses it, as it does
    while another caller's removal of the same thing is under way."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            remove()
            return
        except RuntimeUnavailable:
            if time.monotonic() >= deadline:
                return
            time.sleep(0.2)


def stop_every_runtime(wait_s: float = STOP_WAIT_S) -> list[Leftovers]:
    """`DockerRuntime.stop` on every runtime this process made, as a stop signal asks."""
    with _RUNTIMES_LOCK:
        runtimes = list(_RUNTIMES)
    return [runtime.stop(wait_s) for runtime in runtimes]


def labels_from_env() -> dict[str, str]:
    """The labels in ``CLEANROOM_LABELS`` (``key=value`` pairs separated by commas)."""
    pairs = (item.partition("=") for item in os.environ.get(LABELS_ENV, "").split(","))
    return {k.strip(): v.strip() for k, sep, v in pairs if sep and k.strip()}
