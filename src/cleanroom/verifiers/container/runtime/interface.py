"""The operations verification needs of wherever the agent's container runs.

`sealed`, `cleared` and `shared` ask for nothing else: images to start from, containers
to start, run commands in, freeze, thaw and stop, what the agent changed, its state taken
out and installed elsewhere, files read capped without running anything of the agent's,
and networks for a task's compose services. `docker.DockerRuntime` implements them on a
local Docker daemon, `harbor.HarborRuntime` on Harbor's own environments; each answers
the same calls with the same records. What a runtime cannot do at all (compose services,
say) it declares in its `capabilities`, and a run that needs it is refused before it
starts; a call it makes anyway is `RuntimeUnavailable`.

Every method is one effect. Whether a failure is the agent's or the infrastructure's is
decided by the caller from what comes back: a call the runtime answered and refused
(``status`` set) may be the agent's doing, one that got no answer never is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol, Unpack

from cleanroom.core.observed_file import ObservedFile
from cleanroom.exec_result import ExecResult
from cleanroom.verifiers.container.agent_state.links import Entry
from cleanroom.verifiers.container.agent_state.state_archive import ArtifactRules
from cleanroom.verifiers.container.decision.name_files import NameFiles
from cleanroom.verifiers.container.decision.tamper import Diff
from cleanroom.verifiers.container.runtime.capabilities import RuntimeCapabilities
from cleanroom.verifiers.container.runtime.records import (
    AgentContainerSpec,
    ExecOptions,
    ServiceState,
    StateCopy,
    VerifierContainerSpec,
)
from cleanroom.verifiers.container.task import Task
from cleanroom.verifiers.container.task.compose_model import Service


class Images(Protocol):
    """The images a task's containers start from."""

    def for_task(self, task: Task, image_map: Mapping[str, str]) -> tuple[str, bool]:
        """The task's image, made unless one for its ``environment/`` exists; and
        whether it was made now. `ImageBuildFailed` when the task's definition fails."""
        ...

    def for_verifier(self, task: Task, image_map: Mapping[str, str]) -> tuple[str, bool]:
        """The image a separate verifier runs in (the task's own where that is it)."""
        ...

    def for_service(self, task: Task, service: Service, image_map: Mapping[str, str]) -> str:
        """A compose service's image, made or found."""
        ...

    def workdir(self, image: str) -> str | None:
        """The image's own working folder, if it sets one."""
        ...


class Containers(Protocol):
    """Containers of a task's images: started idle, commands run in them, stopped."""

    def start_agent(self, spec: AgentContainerSpec) -> str:
        """The agent's container as ``spec`` says, idle; returns its id."""
        ...

    def start_verifier(self, spec: VerifierContainerSpec) -> str:
        """A fresh idle verifier's container as ``spec`` says; returns its id."""
        ...

    def start_service(self, service: Service, image: str, network: str, public: bool) -> str:
        """A compose service's container on ``network``, known there by its names."""
        ...

    def name_files(self, container: str) -> NameFiles:
        """The ``/etc/hosts``, ``/etc/resolv.conf`` and ``/etc/hostname`` the runtime made
        for ``container`` when it started it, made again from what nothing inside the
        container can change (never read from it: the agent may have edited them)."""
        ...

    def exec(
        self, container: str, argv: Sequence[str], **options: Unpack[ExecOptions]
    ) -> ExecResult:
        """Run a command and wait for it, its output capped; on timeout it is left
        running and ``timed_out`` is set."""
        ...

    def put_dir(self, container: str, source: Path, dest: str) -> None:
        """Copy a host folder into the container at ``dest``, owned by root."""
        ...

    def lift_cpu_limit(self, container: str) -> None:
        """Let the container use every CPU (freezing or killing needs its processes to run)."""
        ...

    def limit_cpus(self, container: str, cpus: float) -> None:
        """Put a CPU limit back on the container."""
        ...

    def freeze(self, container: str) -> None:
        """Freeze every process in the container."""
        ...

    def thaw(self, container: str) -> None:
        """Let a frozen container's processes run again."""
        ...

    def kill(self, container: str) -> None:
        """Kill every process in the container and wait for it to stop; one already
        stopped or gone is fine."""
        ...

    def remove(self, container: str) -> None:
        """Remove a container and what it alone used, whatever its state."""
        ...

    def state(self, container: str) -> ServiceState:
        """Where a container is: running or not, and its health."""
        ...

    def logs_tail(self, container: str, lines: int = 20) -> str:
        """The last lines a container printed, for an error message."""
        ...


class Files(Protocol):
    """Files in a container, read without running a program of the container's."""

    def read(self, container: str, path: str, cap: int) -> ObservedFile:
        """Observe a file: links reported and not followed, a FIFO, socket, device or
        folder reported from its stat alone, at most ``cap + 1`` bytes read."""
        ...

    def read_with_programs(self, container: str, path: str, cap: int) -> ObservedFile:
        """Observe a file the naive way, with the container's own programs (following
        links). Only ``shared``'s control for a trojaned reader reads so."""
        ...

    def entries(self, container: str, paths: Sequence[str]) -> dict[str, Entry]:
        """What each of ``paths`` is in the container, links not followed, from a stat
        of each, in bulk: a few calls however many paths (nothing of the agent's runs:
        it is asked of a verifier's container before the state is installed). A path
        that is missing, or that the runtime refuses to stat (a name it cannot carry),
        is left out."""
        ...


class StateTransfer(Protocol):
    """What the agent changed, and its state carried into the verifier's container."""

    def changes(self, container: str) -> Diff:
        """What the agent's container changed against its image (evidence, never a gate:
        an unreadable diff comes back empty with the reason)."""
        ...

    def export(
        self, container: str, path: str, cap: int, artifact: ArtifactRules | None = None
    ) -> StateCopy:
        """``path`` taken out of a stopped container as a checked archive;
        `StateTooLarge` past ``cap``, `StateArchiveError` for what the agent left
        unreadable."""
        ...

    def clear(self, container: str, paths: Sequence[str], probe: Sequence[str] = ()) -> set[str]:
        """Remove what the image holds at ``paths`` and make their parents; return the
        ``probe`` paths absent there whose parent exists."""
        ...

    def install(
        self, container: str, copies: Sequence[StateCopy], *, cleared: Sequence[str] = ()
    ) -> None:
        """Replace each state path in the container by the agent's version. What the
        pristine image holds at a state path is removed first (`clear`; ``cleared`` names
        paths already cleared, or found to need no clearing), so the verifier sees the
        agent's state exactly (a file the agent deleted stays deleted)."""
        ...


class Networks(Protocol):
    """The internal networks a task's compose services share with its containers."""

    def create(self, name_hint: str) -> str:
        """A fresh internal network; returns its id."""
        ...

    def join(self, network: str, container: str, service: Service) -> None:
        """Attach a running container to ``network`` under ``service``'s names."""
        ...

    def leave(self, network: str, container: str) -> None:
        """Detach it again."""
        ...

    def remove(self, network: str) -> None:
        """Remove a network; missing is fine."""
        ...


class VerificationRuntime(Protocol):
    """Where verification runs, by resource, and what it can do of what not every
    runtime can."""

    @property
    def capabilities(self) -> RuntimeCapabilities: ...

    @property
    def images(self) -> Images: ...

    @property
    def containers(self) -> Containers: ...

    @property
    def files(self) -> Files: ...

    @property
    def state(self) -> StateTransfer: ...

    @property
    def networks(self) -> Networks: ...
