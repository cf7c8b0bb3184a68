"""What a verification runtime takes and hands back, whichever implementation runs it:
the errors every implementation raises, the containers to start (`AgentContainerSpec`,
`VerifierContainerSpec`) and the options of a command run in one (`ExecOptions`), the
agent's state taken out as a checked archive, the limits a task puts on its containers,
and a service container's state."""

from __future__ import annotations

import posixpath
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, TypedDict

from cleanroom.docker_layer import DockerError
from cleanroom.verifiers.container.agent_state.links import Entry
from cleanroom.verifiers.container.task import EnvironmentConfig, Task


class RuntimeUnavailable(DockerError):
    """The runtime (the Docker daemon, a provider's API) could not be reached, refused a
    call, or could not do what the verifier needed; says which call. ``status`` is the
    answer's HTTP status when there was one, None when nothing answered."""


class StateTooLarge(Exception):
    """A state path's archive is over its size cap (the agent's doing)."""

    def __init__(self, path: str, cap: int) -> None:
        self.path = path
        self.cap = cap
        super().__init__(f"{path} is over the {cap // (1 << 20)} MiB cap on state to verify")


@dataclass
class StateCopy:
    """One state path taken from the agent's container: its kind, and its checked archive.

    ``kind`` is what the agent left at the path: ``directory``, ``file``, ``symlink``,
    ``missing`` or ``other``. ``archive`` (a tar whose top member is the path's own name)
    is None when the path is missing.
    """

    path: str
    kind: str
    archive: IO[bytes] | None = None
    dropped: list[str] = field(default_factory=list)
    too_long: str = ""
    # The archive's members by name (``app/src``), as `state_archive.StateScan` has them.
    tree: dict[str, Entry] = field(default_factory=dict)

    def installed(self) -> dict[str, Entry]:
        """The tree by the paths it has once installed (``/app/src``)."""
        parent = posixpath.dirname(self.path) or "/"
        return {posixpath.join(parent, name): entry for name, entry in self.tree.items()}

    def close(self) -> None:
        if self.archive is not None:
            self.archive.close()


@dataclass(frozen=True)
class Limits:
    """Resource limits and network access applied to a task's containers."""

    network: bool = False
    memory_mb: int | None = None
    cpus: float | None = None
    pids_limit: int | None = None

    @classmethod
    def of(cls, task: Task) -> Limits:
        return cls.of_environment(task.config.environment, task.config.agent_network)

    @classmethod
    def of_environment(cls, env: EnvironmentConfig, network: bool) -> Limits:
        """The limits an ``[environment]`` (or ``[verifier.environment]``) sets."""
        return cls(network, env.memory_limit_mb, env.cpus, env.pids_limit)

    def host_config(self) -> dict[str, Any]:
        """Keyword arguments for ``containers.run``."""
        out: dict[str, Any] = {}
        if self.memory_mb is not None:
            out["mem_limit"] = f"{self.memory_mb}m"
        if self.cpus is not None:
            out["nano_cpus"] = int(self.cpus * 1e9)
        if self.pids_limit is not None:
            out["pids_limit"] = self.pids_limit
        return out


@dataclass(frozen=True)
class AgentContainerSpec:
    """The agent's container to start: idle, ``/logs`` its own (a folder the agent can
    write, as Harbor's shared folder is: the naive modes need what it plants there).

    ``binds`` puts host folders inside it (sealed watches the reward folder from the
    host). ``environment`` is the task's ``[environment.env]``, seen by every command run
    in it. What the image holds under ``/logs`` (inputs some tasks put there) is there
    too, but for the folders in ``logs_hidden`` (the verifier's and the agent's log
    folders, which Harbor mounts over the image's), which start empty. ``logs_on_volume``
    keeps ``/logs`` where the runtime's `Files` read it (the modes that read the reward in
    this container). With ``services_network`` it starts beside the task's compose
    services, known there as ``main``.
    """

    image: str
    limits: Limits
    workdir: str | None
    name_hint: str
    binds: Mapping[Path, str] = field(default_factory=dict)
    environment: Mapping[str, str] = field(default_factory=dict)
    logs_hidden: Sequence[str] = ()
    logs_on_volume: bool = False
    services_network: str | None = None


@dataclass(frozen=True)
class VerifierContainerSpec:
    """A fresh idle verifier's container of the pristine image, host folders bound in
    (``read_only`` names those bound read-only). No network, unless ``join_network_of``
    names a container whose network namespace (and so its localhost) it joins,
    ``services_network`` names the task's compose services' network (the services,
    nothing beyond), or ``network`` asks for one of its own (the task's ``[verifier]
    network_mode = "public"``)."""

    image: str
    limits: Limits
    workdir: str | None
    binds: Mapping[Path, str]
    join_network_of: str | None = None
    read_only: Sequence[str] = ()
    network: bool = False
    environment: Mapping[str, str] = field(default_factory=dict)
    services_network: str | None = None


class ExecOptions(TypedDict, total=False):
    """How a command runs in a container (`Containers.exec`): as ``user`` (the image's
    own by default), with ``env`` over the container's, in ``workdir``, for at most
    ``timeout`` seconds (no limit by default), its output capped at ``cap`` bytes (the
    runtime's default cap otherwise)."""

    user: str | None
    env: Mapping[str, str] | None
    workdir: str | None
    timeout: float | None
    cap: int


@dataclass(frozen=True)
class ServiceState:
    """A service container's state: ``status`` (``running``, ``exited``...), ``health``
    (``starting``, ``healthy``, ``unhealthy``; None without a healthcheck)."""

    status: str
    health: str | None
    exit_code: int | None


@dataclass(frozen=True)
class StartedContainer:
    """What another harness started: the image (its ID) and the host folders bound in,
    by the path they have in the container (``None`` for a volume or a tmpfs); the
    container's own ID, name and labels."""

    image: str
    mounts: dict[str, str | None]
    id: str = ""
    name: str = ""
    labels: dict[str, str] = field(default_factory=dict)


def close_stream(chunks: Iterator[bytes]) -> None:
    """End a stream of archive chunks now, read to its end or not."""
    close = getattr(chunks, "close", None)
    if close is not None:
        close()
