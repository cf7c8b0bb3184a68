"""The container verifier's runtime: what it asks of Docker, through the Docker layer.

Each failure of the daemon or the API surfaces as `RuntimeUnavailable` saying what was
being done, so the orchestrator can turn it into `invalid` (`verifier_unavailable`)
instead of a score; an image that does not build is `ImageBuildFailed` with its log.
Everything this adapter creates carries the ``cleanroom.verify`` label plus any labels
the caller adds (tests add ``cleanroom.test``), so it can be found and removed by label.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import posixpath
import re
import secrets
import shutil
import tarfile
import tempfile
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from cleanroom.docker_layer import (
    OUTPUT_CAP_BYTES,
    Docker,
    DockerError,
    ImageBuildFailed,
    anonymous_volume,
)
from cleanroom.exec_result import ExecResult
from cleanroom.host_files import FileKind, ObservedFile
from cleanroom.verifiers.container import archive_read, overlay, state_archive
from cleanroom.verifiers.container.compose import MAIN, Service
from cleanroom.verifiers.container.links import Entry, EntryKind
from cleanroom.verifiers.container.reward import REWARD_CAP_BYTES
from cleanroom.verifiers.container.tamper import Change, ChangeKind, Diff
from cleanroom.verifiers.container.task import (
    ARTIFACTS_DIR,
    EnvironmentConfig,
    Task,
    rewrite_base_images,
)

LABEL = "cleanroom.verify"
LABELS_ENV = "CLEANROOM_LABELS"  # extra labels, "key=value,key=value", for a whole process
IMAGE_REPOSITORY = "cleanroom-task"
KEEPALIVE = ("sleep", "infinity")
LOGS_TMPFS = "rw,size=64m,mode=0777"
LOGS_STAGING = "/.cleanroom-logs-inputs"
BUILD_LOG_SHOWN = 4000
_READ_ATTEMPTS = 3
_READ_TIMEOUT_S = 10.0
_NOT_A_FOLDER = "not a directory"  # the daemon's words when a parent is a file
# The daemon's words for a path it cannot follow to its end, and what that is.
_UNREACHABLE = {
    "too many links": "a loop of symbolic links",
    "file name too long": "a path too long to follow",
}

# The naive reader (only ``shared``'s control for a trojaned reader): one file read as
# uid 0 the way a program in the container would see it (following links), without
# blocking on a FIFO and without reading past the cap. Exit 3: missing;
# 4: not a regular file (its type on stderr); otherwise stderr holds the size.
_READ_SCRIPT = r"""
p="$1"; cap="$2"
if [ ! -e "$p" ]; then exit 3; fi
if [ ! -f "$p" ]; then stat -L -c '%F' -- "$p" >&2; exit 4; fi
stat -L -c '%s' -- "$p" >&2
exec head -c "$cap" -- "$p"
"""


# Removes each state path, then makes each parent folder, then names (NUL-ended) each
# probed path that is absent and has its parent folder, so needs no clearing:
# ``clear PATH... -- PARENT... --probe PROBED...``.
_CLEAR_STATE_SCRIPT = r"""
part=0
for p in "$@"; do
  case "$p" in --) part=1; continue;; --probe) part=2; continue;; esac
  case $part in
    0) rm -rf -- "$p";;
    1) mkdir -p -- "$p";;
    2) d=${p%/*}
       if [ ! -e "$p" ] && [ ! -L "$p" ] && [ -d "${d:-/}" ]; then printf '%s\0' "$p"; fi;;
  esac
done
"""


def close_stream(chunks: Iterator[bytes]) -> None:
    """End a stream of archive chunks now, read to its end or not."""
    close = getattr(chunks, "close", None)
    if close is not None:
        close()


class RuntimeUnavailable(DockerError):
    """The Docker daemon could not be reached, refused a call, or could not do what the
    verifier needed; says which call."""


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
class ServiceState:
    """A service container's Docker state: ``status`` (``running``, ``exited``...),
    ``health`` (``starting``, ``healthy``, ``unhealthy``; None without a healthcheck)."""

    status: str
    health: str | None
    exit_code: int | None


@dataclass(frozen=True)
class StartedContainer:
    """What another harness started: the image (its ID) and the host folders bound in,
    by the path they have in the container (``None`` for a volume or a tmpfs)."""

    image: str
    mounts: dict[str, str | None]


def started_container(attrs: Mapping[str, Any]) -> StartedContainer:
    """`StartedContainer` from the daemon's ``inspect`` of a container."""
    image = attrs.get("Image")
    if not isinstance(image, str) or not image:
        raise RuntimeUnavailable("the container's inspect names no image")
    mounts: dict[str, str | None] = {}
    for mount in attrs.get("Mounts") or []:
        dest = mount.get("Destination")
        if isinstance(dest, str) and dest:
            source = mount.get("Source") if mount.get("Type") == "bind" else None
            mounts[dest] = source if isinstance(source, str) and source else None
    return StartedContainer(image, mounts)


_build_locks: dict[str, threading.Lock] = {}
_image_logs: dict[str, bytes | None] = {}
_build_locks_guard = threading.Lock()


class DockerRuntime:
    """The verifier's calls on one Docker connection; every method is one effect."""

    def __init__(self, docker: Docker, labels: Mapping[str, str] | None = None):
        self.docker = docker
        self.labels = {LABEL: "1", **(labels or {})}

    @classmethod
    def connect(cls, labels: Mapping[str, str] | None = None) -> DockerRuntime:
        """Connect to the daemon from the environment (``DOCKER_HOST`` or the local socket).

        Labels listed in ``CLEANROOM_LABELS`` are added to everything this runtime
        creates, so a caller can find and remove what a child process built.
        """
        docker = Docker.connect(timeout=300, max_pool_size=32, error=RuntimeUnavailable)
        return cls(docker, {**labels_from_env(), **(labels or {})})

    # Images -------------------------------------------------------------------------

    def image_for(self, task: Task, image_map: Mapping[str, str] | None = None) -> tuple[str, bool]:
        """The task's image tag, built unless an image for this ``environment/`` exists.

        Returns the tag and whether it was built now. The tag carries a hash of every
        file in ``environment/`` (names, modes, contents), so an edit means a new image.
        ``image_map`` rewrites base images (``FROM`` lines) before the build; a task with
        no Dockerfile uses its ``docker_image`` (mapped too), pulled if it is not here.
        """
        mapping = dict(image_map or {})
        timeout = task.config.environment.build_timeout_sec
        if task.dockerfile is None:
            named = task.config.environment.docker_image
            assert named is not None  # load_task requires a Dockerfile or docker_image
            return self._prebuilt(named, mapping), False
        return self._built(task.name, task.environment_dir, "Dockerfile", (), mapping, timeout)

    def verifier_image_for(
        self, task: Task, image_map: Mapping[str, str] | None = None
    ) -> tuple[str, bool]:
        """The image a separate verifier runs in (`Task.verifier_environment`), built or
        pulled as `image_for` does; the task's own image when that is where it runs."""
        found = task.verifier_environment()
        assert found is not None  # only asked of a task with a separate verifier
        mapping = dict(image_map or {})
        if found.build_dir == task.environment_dir or (
            found.build_dir is None and not found.bundled_tests
        ):
            return self.image_for(task, mapping)
        if found.build_dir is None:
            assert found.image is not None  # a bundled image is named
            return self._prebuilt(found.image, mapping), False
        name = f"{task.name}-verifier"
        timeout = found.config.build_timeout_sec
        return self._built(name, found.build_dir, "Dockerfile", (), mapping, timeout)

    def service_image(
        self, task: Task, service: Service, image_map: Mapping[str, str] | None = None
    ) -> str:
        """A compose service's image: its ``build`` made (or reused) as the task's own
        image is, with the same image map; else its ``image``, pulled when not here."""
        mapping = dict(image_map or {})
        if service.build is None:
            assert service.image is not None  # the compose parser requires one of them
            return self._prebuilt(service.image, mapping)
        build = service.build
        timeout = task.config.environment.build_timeout_sec
        name = f"{task.name}-{service.name}"
        return self._built(name, build.context, build.dockerfile, build.args, mapping, timeout)[0]

    def _built(
        self,
        name: str,
        folder: Path,
        dockerfile: str,
        args: Sequence[tuple[str, str]],
        image_map: Mapping[str, str],
        timeout: float,
    ) -> tuple[str, bool]:
        with contextlib.ExitStack() as stack:
            context = folder
            original = (folder / dockerfile).read_text(encoding="utf-8")
            rewritten = rewrite_base_images(original, dict(image_map))
            if rewritten != original:
                context = Path(stack.enter_context(tempfile.TemporaryDirectory()))
                context = Path(shutil.copytree(folder, context / folder.name))
                (context / dockerfile).write_text(rewritten, encoding="utf-8")
            digest = environment_hash(context)
            if dockerfile != "Dockerfile" or args:
                extra = f"{digest} {dockerfile} {sorted(args)}".encode()
                digest = hashlib.sha256(extra).hexdigest()[:16]
            tag = f"{IMAGE_REPOSITORY}/{_safe_name(name)}:{digest}"
            with _build_locks_guard:
                lock = _build_locks.setdefault(tag, threading.Lock())
            with lock:
                if self.docker.inspect_image(tag) is not None:
                    return tag, False
                self._build(tag, context, dockerfile, dict(args), timeout)
                return tag, True

    def _prebuilt(self, named: str, image_map: Mapping[str, str]) -> str:
        image = image_map.get(named, named)
        if self.docker.inspect_image(image) is None:
            try:
                self.docker.pull_image(image)
            except RuntimeUnavailable as exc:
                if exc.status is not None and 400 <= exc.status < 500:
                    raise ImageBuildFailed(image, f"docker_image {image}: {exc}") from exc
                raise
        return image

    def image_logs(self, image: str) -> bytes | None:
        """What the image holds under ``/logs``, as a tar whose top member is ``logs``,
        or None when it holds nothing there. The agent's ``/logs`` is a tmpfs that hides
        it, so the agent container gets a copy (`start_agent_container`)."""
        with _build_locks_guard:
            if image in _image_logs:
                return _image_logs[image]
        created = self.docker.create_container(
            image, KEEPALIVE, network_disabled=True, labels=self.labels
        )
        try:
            try:
                chunks, info = self.docker.get_archive(created, "/logs")
            except RuntimeUnavailable as exc:
                if exc.status != 404:
                    raise
                found = None
            else:
                data = b"".join(chunks)
                found = data if _kind_of_mode(int(info.get("mode", 0))) == "directory" else None
                if found is not None and _only_the_folder(found):
                    found = None
        finally:
            self.remove(created)
        with _build_locks_guard:
            _image_logs[image] = found
        return found

    def image_workdir(self, image: str) -> str | None:
        """The image's own working folder (its Dockerfile's last ``WORKDIR``), if any."""
        attrs = self.docker.inspect_image(image)
        if attrs is None:
            raise RuntimeUnavailable(f"inspecting image {image}: not found")
        config = attrs.get("Config") or {}
        return config.get("WorkingDir") or None

    def _build(
        self, tag: str, context: Path, dockerfile: str, args: Mapping[str, str], timeout: float
    ) -> None:
        """`ImageBuildFailed` when the task's definition is at fault: a failed step, or a
        request the daemon refused as bad (4xx)."""
        try:
            self.docker.build_image(
                tag,
                path=str(context),
                labels=self.labels,
                timeout=int(timeout),
                log_chars=BUILD_LOG_SHOWN,
                dockerfile=dockerfile,
                buildargs=args,
            )
        except RuntimeUnavailable as exc:
            if exc.status is not None and 400 <= exc.status < 500:
                raise ImageBuildFailed(tag, str(exc)[-BUILD_LOG_SHOWN:]) from exc
            raise

    def remove_image(self, image: str) -> None:
        """Remove an image; missing is fine."""
        self.docker.remove_image(image)

    # Containers ---------------------------------------------------------------------

    def start_agent_container(
        self,
        image: str,
        limits: Limits,
        workdir: str | None,
        name_hint: str,
        binds: Mapping[Path, str] | None = None,
        environment: Mapping[str, str] | None = None,
        logs_hidden: Sequence[str] = (),
        logs_on_volume: bool = False,
        services_network: str | None = None,
    ) -> str:
        """Start the task container idle, no network unless asked, ``/logs`` its own.

        With ``services_network`` (the task's compose services) it starts on that
        network as ``main``, and joins the default bridge too when ``limits`` give it a
        network.

        ``/logs`` is a folder the agent can write (as in Harbor, where it is a shared
        folder): the naive modes need the planted files to be there. It is a tmpfs, or
        with ``logs_on_volume`` an anonymous volume removed with the container: the
        Docker archive API, which reads the reward without running anything in the
        container, sees volumes but not tmpfs mounts. What the image itself holds under
        ``/logs`` (inputs some tasks put there) is there too, but for the folders in
        ``logs_hidden`` (the verifier's and the agent's log folders, which Harbor mounts
        over the image's too), which start empty. ``binds`` puts host folders inside it
        (sealed mode watches the reward folder from the host). ``environment`` is the
        task's ``[environment.env]``, seen by every command run in the container.
        """
        volumes = {str(h): {"bind": d, "mode": "rw"} for h, d in (binds or {}).items()}
        # Under a tmpfs /logs, Harbor's artifacts folder is a volume of its own (empty,
        # as Harbor mounts an empty host folder there): it outlives the agent's
        # processes, and the archive API that carries it to the verifier can read it.
        logs: dict[str, Any] = (
            {"mounts": [anonymous_volume("/logs")]}
            if logs_on_volume
            else {
                "tmpfs": {"/logs": LOGS_TMPFS},
                "mounts": [anonymous_volume(ARTIFACTS_DIR, empty=True)],
            }
        )
        ctr = self.docker.run_container(
            image,
            KEEPALIVE,
            **_network_options(limits.network, services_network, (MAIN,)),
            **logs,
            volumes=volumes,
            working_dir=workdir or "",
            environment=dict(environment or {}),
            labels={**self.labels, "cleanroom.role": "agent", "cleanroom.task": name_hint},
            **limits.host_config(),
        )
        if services_network is not None and limits.network:
            self.docker.connect_network("bridge", ctr)
        if logs_on_volume:
            # Docker fills a new volume with what the image holds at its mount point.
            self._empty_logs(ctr, logs_hidden)
            return ctr
        inputs = self.image_logs(image)
        if inputs is not None:
            self._restore_logs(ctr, inputs, logs_hidden)
        return ctr

    def _empty_logs(self, ctr: str, hidden: Sequence[str]) -> None:
        # Before anything of the agent's has run: the image's own rm, as root.
        under = [h for h in hidden if h.startswith("/logs/")]
        if not under:
            return
        emptied = self.exec(ctr, ["rm", "-rf", "--", *under], user="0", workdir="/")
        if emptied.exit_code != 0:
            raise RuntimeUnavailable(f"emptying {under}: {emptied.output[-300:]!r}")

    def _restore_logs(self, ctr: str, archive: bytes, hidden: Sequence[str]) -> None:
        # The daemon's archive calls write beneath a tmpfs, not into it: the files go to a
        # staging folder and a copy inside the container puts them on the tmpfs.
        skip = tuple(h.strip("/") for h in hidden)
        staged = _renamed_top(archive, LOGS_STAGING.lstrip("/"), skip)
        self.docker.put_archive(ctr, "/", staged)
        copied = self.exec(
            ctr,
            ["sh", "-c", 'cp -a "$1"/. /logs/ && rm -rf -- "$1"', "restore", LOGS_STAGING],
            user="0",
            workdir="/",
        )
        if copied.exit_code != 0:
            raise RuntimeUnavailable(f"copying the image's /logs inputs: {copied.output[-300:]!r}")

    def start_verifier_container(
        self,
        image: str,
        limits: Limits,
        workdir: str | None,
        binds: Mapping[Path, str],
        join_network_of: str | None,
        read_only: Sequence[str] = (),
        network: bool = False,
        environment: Mapping[str, str] | None = None,
        services_network: str | None = None,
    ) -> str:
        """Start a fresh idle verifier container from the pristine task image.

        Host folders are bound in (``read_only`` names those bound read-only). No network,
        unless ``join_network_of`` names a container whose network namespace (and so its
        localhost) this one joins, ``services_network`` names the task's compose services'
        network (internal: the services, nothing beyond), or ``network`` asks for one of
        its own (the task's ``[verifier] network_mode = "public"``). It cannot make
        device nodes.
        """
        if join_network_of:
            networking: dict[str, Any] = {"network_mode": f"container:{join_network_of}"}
        else:
            networking = _network_options(network, services_network, ())
        volumes = {
            str(host): {"bind": dest, "mode": "ro" if dest in read_only else "rw"}
            for host, dest in binds.items()
        }
        ctr = self.docker.run_container(
            image,
            KEEPALIVE,
            **networking,
            volumes=volumes,
            cap_drop=["MKNOD"],
            environment=dict(environment or {}),
            working_dir=workdir or "",
            labels={**self.labels, "cleanroom.role": "verifier"},
            **limits.host_config(),
        )
        if services_network is not None and network and not join_network_of:
            self.docker.connect_network("bridge", ctr)
        return ctr

    # Compose services beside the agent's container ------------------------------------

    def create_services_network(self, name_hint: str) -> str:
        """A fresh internal network for one rollout's compose services: they reach each
        other (and ``main``) by name, and nothing beyond it. Returns its id."""
        name = f"cleanroom-{_safe_name(name_hint)}-{secrets.token_hex(4)}"
        return self.docker.create_network(name, internal=True, labels=self.labels)

    def start_service(self, service: Service, image: str, network: str, public: bool) -> str:
        """Start a compose service on ``network``, known there by its name, with the
        Compose keys `compose.Service` carries; joined to the default bridge as well when
        the task's environment has a network (``public``)."""
        options: dict[str, Any] = {}
        if service.healthcheck_disabled:
            options["healthcheck"] = {"test": ["NONE"]}
        elif service.healthcheck is not None:
            options["healthcheck"] = service.healthcheck.docker()
        if service.restart != "no":
            policy, _, count = service.restart.partition(":")
            options["restart_policy"] = {"Name": policy, "MaximumRetryCount": int(count or 0)}
        if service.entrypoint is not None:
            options["entrypoint"] = list(service.entrypoint)
        if service.init:
            options["init"] = True
        if service.tmpfs:
            options["tmpfs"] = dict(_tmpfs_entry(entry) for entry in service.tmpfs)
        if service.hostname:
            options["hostname"] = service.hostname
        ctr = self.docker.run_container(
            image,
            service.command,
            **_network_options(False, network, _names_of(service)),
            environment=dict(service.environment),
            user=service.user or "",
            working_dir=service.working_dir or "",
            labels={
                **dict(service.labels),
                **self.labels,
                "cleanroom.role": "service",
                "cleanroom.service": service.name,
            },
            **options,
        )
        if public:
            self.docker.connect_network("bridge", ctr)
        return ctr

    def join_services_network(self, network: str, container: str, service: Service) -> None:
        """Attach the running container of ``service``, which another harness started, to
        ``network`` under the service's names."""
        self.docker.connect_network(network, container, _names_of(service))

    def leave_services_network(self, network: str, container: str) -> None:
        """Detach it again, leaving the container to its owner."""
        self.docker.disconnect_network(network, container)

    def project_services(
        self, project_label: str, project: str, service_label: str
    ) -> dict[str, str]:
        """The containers of a Compose project by service name."""
        found = self.docker.containers_labelled(f"{project_label}={project}")
        return {c.labels[service_label]: c.id for c in found if c.labels.get(service_label)}

    def service_state(self, container: str) -> ServiceState:
        """Where a service's container is: running or not, and its health."""
        state = self.docker.inspect_container(container).get("State") or {}
        health = (state.get("Health") or {}).get("Status")
        return ServiceState(str(state.get("Status", "")), health, state.get("ExitCode"))

    def logs_tail(self, container: str, lines: int = 20) -> str:
        """The last lines a container printed, for an error message."""
        return self.docker.container_logs(container, lines).decode("utf-8", "replace")

    def remove_network(self, network: str) -> None:
        """Remove a network (its containers removed first); missing is fine."""
        self.docker.remove_network(network)

    # Containers another harness started ---------------------------------------------

    def find_container(self, labels: Mapping[str, str]) -> str:
        """The one container, running or not, carrying all of ``labels``.

        `RuntimeUnavailable` when there is none or more than one: the caller's harness
        did not leave the container it said it started.
        """
        wanted = [f"{k}={v}" for k, v in labels.items()]
        found = self.docker.containers_labelled(*wanted)
        if len(found) != 1:
            names = ", ".join(c.name for c in found) or "none"
            raise RuntimeUnavailable(
                f"expected one container labelled {', '.join(wanted)}, found {names}"
            )
        return found[0].id

    def started_container(self, container: str) -> StartedContainer:
        """The image a running container was started from, and what is bound into it."""
        return started_container(self.docker.inspect_container(container))

    def lift_cpu_limit(self, container: str) -> None:
        """Let the container's processes use every CPU: freezing or killing a process
        needs it to run, and a throttled one may not get the CPU in time."""
        self.docker.lift_cpu_limit(container)

    def limit_cpus(self, container: str, cpus: float) -> None:
        """Put a CPU limit back on the container (after `lift_cpu_limit`)."""
        self.docker.limit_cpus(container, cpus)

    def pause(self, container: str) -> None:
        """Freeze every process in the container (cgroup freezer)."""
        self.docker.pause(container)

    def unpause(self, container: str) -> None:
        """Thaw a paused container."""
        self.docker.unpause(container)

    def changes(self, container: str) -> Diff:
        """The container's filesystem diff and how it was read (``overlay`` or ``api``).

        The diff is evidence, never a gate: when neither the writable layer nor the API
        can list it (the daemon's own walk fails on trees deeper than PATH_MAX), the
        result is empty, with ``source`` ``unreadable`` and the reason.
        """
        graph = self.docker.inspect_container(container).get("GraphDriver") or {}
        try:
            return overlay.changes_from_graph_driver(graph)
        except overlay.OverlayUnreadable as exc:
            unreadable = str(exc)
        try:
            raw = self.docker.diff(container)
        except RuntimeUnavailable as exc:
            return Diff([], "unreadable", f"{unreadable}; {exc}"[:500])
        return Diff([Change(d["Path"], ChangeKind.from_docker(d["Kind"])) for d in raw], "api")

    # State carried from the agent's container to the verifier's -----------------------

    def export_state(
        self,
        container: str,
        path: str,
        cap: int,
        artifact: state_archive.ArtifactRules | None = None,
    ) -> StateCopy:
        """Take ``path`` from a (paused) container as a checked tar archive.

        Raises `StateTooLarge` past ``cap`` bytes, and `StateArchiveError` when what
        arrived cannot be read as an archive or the path is reached through a loop of
        links (a transport failure is `RuntimeUnavailable` instead); device nodes and
        sockets are dropped and listed; a name near PATH_MAX is reported in ``too_long``.
        An ``artifact`` passes its stricter rules too.
        """
        try:
            chunks, info = self.docker.get_archive(container, path)
        except RuntimeUnavailable as exc:
            answered = exc.status is not None
            if exc.status == 404 or (answered and _NOT_A_FOLDER in str(exc)):
                return StateCopy(path, "missing")
            # A path through a loop of links, or deeper than a path can go, is what the
            # agent left there, not a fault of the daemon's.
            for words, note in _UNREACHABLE.items():
                if answered and words in str(exc):
                    unreachable = f"{path} is reached through {note}"
                    raise state_archive.StateArchiveError(unreachable) from exc
            raise
        kind = _kind_of_mode(int(info.get("mode", 0)))
        spooled: IO[bytes] = tempfile.TemporaryFile(prefix="cleanroom-state-")  # noqa: SIM115
        try:
            size = state_archive.copy_capped(chunks, spooled, cap)
        except BaseException:
            spooled.close()
            raise
        finally:
            # An archive left half read holds the daemon's side of the stream, and with
            # it the container: its removal would wait for as long as anything (a stored
            # exception's frames) kept the stream alive.
            close_stream(chunks)
        if size is None:
            spooled.close()
            raise StateTooLarge(path, cap)
        copy = StateCopy(path, kind, spooled)
        try:
            found = state_archive.scan(state_archive.rewind(spooled), artifact)
            copy.too_long = found.too_long
            copy.tree = found.tree
            copy.dropped = found.dropped[: state_archive.SHOWN]
            if found.dropped or artifact is not None:
                filtered: IO[bytes] = tempfile.TemporaryFile(prefix="cleanroom-state-")  # noqa: SIM115
                state_archive.without_dropped(state_archive.rewind(spooled), filtered, artifact)
                spooled.close()
                copy.archive = filtered
        except state_archive.StateArchiveError:
            copy.close()
            raise
        return copy

    def clear_state(
        self, container: str, paths: Sequence[str], probe: Sequence[str] = ()
    ) -> set[str]:
        """Remove what the pristine image holds at each of ``paths`` in the verifier's
        container, and make their parent folders, ready for `install_state`; return the
        ``probe`` paths that are absent there and have their parent folder (installing
        at them needs no clearing)."""
        if not paths and not probe:
            return set()
        parents = sorted({posixpath.dirname(p) or "/" for p in paths})
        argv = ["sh", "-c", _CLEAR_STATE_SCRIPT, "clear", *paths, "--", *parents]
        cleared = self.exec(container, [*argv, "--probe", *probe], user="0", workdir="/")
        if cleared.exit_code != 0:
            raise RuntimeUnavailable(f"clearing state paths {paths}: {cleared.output[-300:]!r}")
        named = cleared.stdout.decode("utf-8", "surrogateescape").split("\0")[:-1]
        return {p for p in named if p in probe}

    def install_state(
        self, container: str, copies: Sequence[StateCopy], *, cleared: Sequence[str] = ()
    ) -> None:
        """Replace each state path in the verifier's container by the agent's version.

        What the pristine image holds at a state path is removed first (`clear_state`;
        ``cleared`` names paths already cleared, or found to need no clearing), so the
        verifier sees the agent's state exactly (a file the agent deleted stays deleted).
        """
        self.clear_state(container, [c.path for c in copies if c.path not in cleared])
        for copy in copies:
            if copy.archive is None:
                continue
            parent = posixpath.dirname(copy.path) or "/"
            copy.archive.seek(0)
            self.docker.put_archive(container, parent, copy.archive)

    def entry(self, container: str, path: str) -> Entry:
        """What ``path`` is in the container, from the daemon's stat of it (nothing runs
        in the container): a link's target comes back evaluated in the container's root."""
        stat = self.docker.stat_path(container, path)
        if stat is None:
            return Entry(EntryKind.MISSING)
        kind = _kind_of_mode(int(stat.get("mode", 0)))
        if kind == "symlink":
            return Entry(EntryKind.LINK, str(stat.get("linkTarget") or ""))
        return Entry(EntryKind.FOLDER if kind == "directory" else EntryKind.OTHER)

    def kill(self, container: str) -> None:
        """SIGKILL every process in the container and wait for it to stop; a container
        already stopped (409) or gone (404) is fine, any other failure raises."""
        try:
            self.docker.kill(container)
        except RuntimeUnavailable as exc:
            if exc.status not in (404, 409):
                raise

    def remove(self, container: str) -> None:
        """Remove a container and its anonymous volumes, whatever its state."""
        self.docker.remove_container(container, volumes=True)

    def remove_labelled(self, labels: Mapping[str, str], *, images: bool = True) -> int:
        """Remove every container, then every network and (unless ``images`` is false)
        every image, carrying all of ``labels``."""
        wanted = [f"{k}={v}" for k, v in labels.items()]
        removed = 0
        for c in self.docker.containers_labelled(*wanted):
            self.remove(c.id)
            removed += 1
        for network in self.docker.networks_labelled(*wanted):
            self.remove_network(network)
            removed += 1
        if not images:
            return removed
        for image in self.docker.images_labelled(*wanted):
            self.remove_image(image)
            removed += 1
        return removed

    # Files and commands -------------------------------------------------------------

    def put_dir(self, container: str, source: Path, dest: str) -> None:
        """Copy a host folder into the container at ``dest`` (merged into what is there)."""
        parent, name = os.path.split(dest.rstrip("/"))
        self.docker.put_archive(container, parent or "/", _tar_folder(source, name))

    def exec(
        self,
        container: str,
        argv: Sequence[str],
        *,
        user: str | None = None,
        env: Mapping[str, str] | None = None,
        workdir: str | None = None,
        timeout: float | None = None,
        cap: int = OUTPUT_CAP_BYTES,
    ) -> ExecResult:
        """Run a command and wait for it (not for children that keep its output open).

        On timeout the command is left running and ``timed_out`` is set: the caller
        decides what that means and kills the container when it must.
        """
        return self.docker.exec(
            container, argv, user=user, env=env, workdir=workdir, timeout=timeout, cap=cap
        )

    def read_file(self, container: str, path: str, cap: int = REWARD_CAP_BYTES) -> ObservedFile:
        """Observe a file in a container through the Docker archive API: nothing runs in
        the container, links are reported and not followed, a FIFO, socket, device or
        folder is reported from its stat alone, and at most ``cap + 1`` bytes are read.

        A stream cut short or unreadable (the daemon's output lost on its way, or the
        file changing under the reader) is tried again; if it stays so the daemon's word
        cannot be trusted and `RuntimeUnavailable` says so.
        """
        failed = ""
        for _ in range(_READ_ATTEMPTS):
            try:
                chunks, stat = self.docker.get_archive(container, path)
            except RuntimeUnavailable as exc:
                answered = exc.status is not None
                # A path under a file (ENOTDIR) names nothing, as for a program that looks.
                if exc.status == 404 or (answered and _NOT_A_FOLDER in str(exc)):
                    return ObservedFile.missing(path)
                # Links that lead back to themselves or further than a path can go are
                # what the agent left, not a fault of the daemon's.
                for words, note in _UNREACHABLE.items():
                    if answered and words in str(exc):
                        return ObservedFile(path, FileKind.OTHER, note=note)
                raise
            try:
                return archive_read.observe(path, stat, chunks, cap)
            except archive_read.ArchiveReadError as exc:
                failed = str(exc)
            finally:
                close_stream(chunks)
        raise RuntimeUnavailable(f"reading {path}: {failed} in {_READ_ATTEMPTS} attempts")

    def read_file_in_container(
        self, container: str, path: str, cap: int = REWARD_CAP_BYTES
    ) -> ObservedFile:
        """Observe a file the naive way, by running ``sh``, ``stat`` and ``head`` in the
        container as uid 0 (following links as a program would). Only the ``shared``
        baseline reads so: a program the agent replaced answers for the file.

        A read that returns fewer bytes than the file's size is tried again; if it stays
        short `RuntimeUnavailable` says so.
        """
        short = ""
        for _ in range(_READ_ATTEMPTS):
            observed, short = self._read_once(container, path, cap)
            if not short:
                return observed
        raise RuntimeUnavailable(f"reading {path}: {short} in {_READ_ATTEMPTS} attempts")

    def _read_once(self, container: str, path: str, cap: int) -> tuple[ObservedFile, str]:
        result = self.exec(
            container,
            ["sh", "-c", _READ_SCRIPT, "read", path, str(cap + 1)],
            user="0",
            workdir="/",
            timeout=_READ_TIMEOUT_S,
            cap=cap + 4096,
        )
        if result.timed_out:
            note = f"reading it took over {_READ_TIMEOUT_S} s"
            return ObservedFile(path, FileKind.OTHER, note=note), ""
        if result.exit_code == 3:
            return ObservedFile.missing(path), ""
        if result.exit_code == 4:
            note = result.stderr.decode(errors="replace").strip()
            return ObservedFile(path, FileKind.OTHER, note=note), ""
        if result.exit_code != 0:
            raise RuntimeUnavailable(
                f"reading {path} exited {result.exit_code}: {result.output[-500:]!r}"
            )
        size = _int_or_none(result.stderr.decode(errors="replace").strip())
        data = result.stdout
        if size is None:
            return ObservedFile(path, FileKind.REGULAR, data), "no size came back"
        if len(data) < min(size, cap + 1):
            return ObservedFile(path, FileKind.REGULAR, data), (
                f"{len(data)} bytes came back of {size}"
            )
        if len(data) > cap or size > cap:
            return ObservedFile(path, FileKind.OVERSIZE, data[:cap], max(size, len(data))), ""
        return ObservedFile(path, FileKind.REGULAR, data, size), ""


def _network_options(
    public: bool, services_network: str | None, aliases: Sequence[str]
) -> dict[str, Any]:
    """``containers.run`` options: on the services network (known there by ``aliases``)
    when there is one, else the default bridge when ``public``, else no network."""
    if services_network is None:
        return {"network_mode": "bridge" if public else "none"}
    return {"network": services_network, "aliases": list(aliases)}


def _names_of(service: Service) -> tuple[str, ...]:
    """A service's names on its network: its own, and its ``container_name``."""
    if service.container_name and service.container_name != service.name:
        return (service.name, service.container_name)
    return (service.name,)


def _tmpfs_entry(entry: str) -> tuple[str, str]:
    path, _, options = entry.partition(":")
    return path, options


def _kind_of_mode(mode: int) -> str:
    # Go's os.FileMode bits, as the archive endpoint reports them.
    if mode & (1 << 31):
        return "directory"
    if mode & (1 << 27):
        return "symlink"
    if mode & ((1 << 26) | (1 << 25) | (1 << 24) | (1 << 21)):
        return "other"  # device, named pipe, socket, char device
    return "file"


def labels_from_env() -> dict[str, str]:
    """The labels in ``CLEANROOM_LABELS`` (``key=value`` pairs separated by commas)."""
    pairs = (item.partition("=") for item in os.environ.get(LABELS_ENV, "").split(","))
    return {k.strip(): v.strip() for k, sep, v in pairs if sep and k.strip()}


def environment_hash(folder: Path) -> str:
    """A hash of every file under ``folder``: relative names, executable bits and contents."""
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        if path.is_symlink():
            digest.update(f"L {rel} {os.readlink(path)}\n".encode())
        elif path.is_file():
            mode = "x" if os.access(path, os.X_OK) else "-"
            digest.update(f"F {rel} {mode} {path.stat().st_size}\n".encode())
            digest.update(path.read_bytes())
        else:
            digest.update(f"D {rel}\n".encode())
    return digest.hexdigest()[:16]


def _renamed_top(archive: bytes, name: str, skip: Sequence[str] = ()) -> bytes:
    """The tar ``archive`` with its top member (and everything under it) renamed ``name``,
    leaving out the members at or under the paths in ``skip`` (``logs/verifier``)."""
    out = io.BytesIO()
    with (
        tarfile.open(fileobj=io.BytesIO(archive)) as src,
        tarfile.open(fileobj=out, mode="w") as dst,
    ):
        for member in src:
            original = member.name.rstrip("/")
            if any(original == s or original.startswith(s + "/") for s in skip):
                continue
            _, sep, rest = member.name.partition("/")
            member.name = f"{name}{sep}{rest}"
            if member.islnk():
                _, lsep, lrest = member.linkname.partition("/")
                member.linkname = f"{name}{lsep}{lrest}"
            dst.addfile(member, src.extractfile(member) if member.isfile() else None)
    return out.getvalue()


def _only_the_folder(archive: bytes) -> bool:
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        return len(tar.getmembers()) <= 1


def _safe_name(name: str) -> str:
    return re.sub(r"[^a-z0-9_.-]+", "-", name.lower()).strip("-.") or "task"


def _tar_folder(source: Path, name: str) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(str(source), arcname=name, filter=_root_owned)
    return buf.getvalue()


def _root_owned(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    return info


def _int_or_none(text: str) -> int | None:
    try:
        return int(text.splitlines()[-1]) if text else None
    except ValueError:
        return None
