"""Containers on a Docker daemon: the agent's, the verifier's and a task's compose
services, started idle; commands run in them; frozen, thawed, killed and removed.

Everything this creates carries the runtime's labels (``cleanroom.verify`` and any the
caller adds), with its role, so it can be found and removed by label.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Unpack

from cleanroom.docker_layer import Docker, anonymous_volume
from cleanroom.exec_result import ExecResult
from cleanroom.verifiers.container.decision.name_files import (
    NAME_FILE_CAP,
    NAME_FILE_PATHS,
    NameFiles,
    NameFilesUnreadable,
)
from cleanroom.verifiers.container.runtime.docker.files import DockerFiles
from cleanroom.verifiers.container.runtime.docker.images import KEEPALIVE, DockerImages
from cleanroom.verifiers.container.runtime.docker.name_files import made_again, probe_options
from cleanroom.verifiers.container.runtime.docker.tar import renamed_top, tar_folder
from cleanroom.verifiers.container.runtime.records import (
    AgentContainerSpec,
    ExecOptions,
    RuntimeUnavailable,
    ServiceState,
    StartedContainer,
    VerifierContainerSpec,
)
from cleanroom.verifiers.container.task import ARTIFACTS_DIR
from cleanroom.verifiers.container.task.compose_model import MAIN, Service

LOGS_TMPFS = "rw,size=64m,mode=0777"
LOGS_STAGING = "/.cleanroom-logs-inputs"


# The labels Compose gives what it builds and starts (its project, service, ...).
COMPOSE_LABEL_PREFIX = "com.docker.compose."


class DockerContainers:
    """The containers of one Docker connection."""

    def __init__(self, docker: Docker, labels: Mapping[str, str], images: DockerImages) -> None:
        self.docker = docker
        self.labels = dict(labels)
        self.images = images
        self.made = images.made

    def _run(self, image: str, command: Sequence[str] | None, **options: Any) -> str:
        """Start a container, known to `made` from the moment the daemon names it."""
        with self.made.making(f"starting a container of {image}"):
            ctr = self.docker.run_container(image, command, **options)
            self.made.container(ctr)
        return ctr

    def start_agent(self, spec: AgentContainerSpec) -> str:
        """Start the task container idle, no network unless its limits give one.

        With a services network it starts on that network as ``main``, and joins the
        default bridge too when its limits give it a network. ``/logs`` is a tmpfs, or
        with ``logs_on_volume`` an anonymous volume removed with the container: the
        Docker archive API, which reads the reward without running anything in the
        container, sees volumes but not tmpfs mounts.
        """
        volumes = {str(h): {"bind": d, "mode": "rw"} for h, d in spec.binds.items()}
        # Under a tmpfs /logs, Harbor's artifacts folder is a volume of its own (empty,
        # as Harbor mounts an empty host folder there): it outlives the agent's
        # processes, and the archive API that carries it to the verifier can read it.
        logs: dict[str, Any] = (
            {"mounts": [anonymous_volume("/logs")]}
            if spec.logs_on_volume
            else {
                "tmpfs": {"/logs": LOGS_TMPFS},
                "mounts": [anonymous_volume(ARTIFACTS_DIR, empty=True)],
            }
        )
        ctr = self._run(
            spec.image,
            KEEPALIVE,
            **network_options(spec.limits.network, spec.services_network, (MAIN,)),
            **logs,
            volumes=volumes,
            working_dir=spec.workdir or "",
            environment=dict(spec.environment),
            labels={
                **self.labels,
                "cleanroom.role": "agent",
                "cleanroom.task": spec.name_hint,
                **self._not_compose(spec.image),
            },
            # Docker's default capabilities on podman too, which leaves out MKNOD: an
            # agent may make a device node on either, and is judged the same for it.
            cap_add=["MKNOD"] if self.docker.podman else [],
            **spec.limits.host_config(),
        )
        if spec.services_network is not None and spec.limits.network:
            self.docker.connect_network("bridge", ctr)
        if spec.logs_on_volume:
            # Docker fills a new volume with what the image holds at its mount point.
            self._empty_logs(ctr, spec.logs_hidden)
            return ctr
        inputs = self.images.logs(spec.image)
        if inputs is not None:
            self._restore_logs(ctr, inputs, spec.logs_hidden)
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
        staged = renamed_top(archive, LOGS_STAGING.lstrip("/"), skip)
        self.docker.put_archive(ctr, "/", staged)
        copied = self.exec(
            ctr,
            ["sh", "-c", 'cp -a "$1"/. /logs/ && rm -rf -- "$1"', "restore", LOGS_STAGING],
            user="0",
            workdir="/",
        )
        if copied.exit_code != 0:
            raise RuntimeUnavailable(f"copying the image's /logs inputs: {copied.output[-300:]!r}")

    def start_verifier(self, spec: VerifierContainerSpec) -> str:
        """Start a fresh idle verifier container from the pristine task image; it cannot
        make device nodes."""
        if spec.join_network_of:
            networking: dict[str, Any] = {"network_mode": f"container:{spec.join_network_of}"}
        else:
            networking = network_options(spec.network, spec.services_network, ())
        volumes = {
            str(host): {"bind": dest, "mode": "ro" if dest in spec.read_only else "rw"}
            for host, dest in spec.binds.items()
        }
        ctr = self._run(
            spec.image,
            KEEPALIVE,
            **networking,
            volumes=volumes,
            cap_drop=["MKNOD"],
            environment=dict(spec.environment),
            working_dir=spec.workdir or "",
            labels={**self.labels, "cleanroom.role": "verifier", **self._not_compose(spec.image)},
            **spec.limits.host_config(),
        )
        if spec.services_network is not None and spec.network and not spec.join_network_of:
            self.docker.connect_network("bridge", ctr)
        return ctr

    def _not_compose(self, image: str) -> dict[str, str]:
        """Labels that blank the Compose labels ``image`` carries (a container takes its
        image's labels): a container of cleanroom's (a verifier's, a control's agent) of
        an image Compose built must not pass for a container of that project, to Compose
        or to anyone finding one by them."""
        attrs = self.docker.inspect_image(image) or {}
        inherited = (attrs.get("Config") or {}).get("Labels") or {}
        return {k: "" for k in inherited if k.startswith(COMPOSE_LABEL_PREFIX)}

    # Compose services beside the agent's container ------------------------------------

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
        ctr = self._run(
            image,
            service.command,
            **network_options(False, network, names_of(service)),
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

    def name_files(self, container: str) -> NameFiles:
        """The name files the daemon made for ``container`` when it started it, made
        again (`name_files`): from a probe, a fresh idle container of its image started
        as it was (nothing of the agent's in it), removed at once."""
        attrs = self.docker.inspect_container(container)
        image = str(attrs.get("Image") or "")
        probe = self._run(
            image,
            KEEPALIVE,
            **probe_options(attrs),
            cap_drop=["MKNOD"],
            labels={**self.labels, "cleanroom.role": "probe"},
        )
        try:
            files = DockerFiles(self.docker)
            observed = {p: files.read(probe, p, NAME_FILE_CAP) for p in NAME_FILE_PATHS}
            probe_attrs = self.docker.inspect_container(probe)
        finally:
            self.remove(probe)
        try:
            return made_again(attrs, probe_attrs, NameFiles.of(observed))
        except NameFilesUnreadable as exc:
            raise RuntimeUnavailable(f"making the name files of {container[:12]}: {exc}") from exc

    def put_dir(self, container: str, source: Path, dest: str) -> None:
        """Copy a host folder into the container at ``dest`` (merged into what is there)."""
        parent, name = os.path.split(dest.rstrip("/"))
        self.docker.put_archive(container, parent or "/", tar_folder(source, name))

    def exec(
        self, container: str, argv: Sequence[str], **options: Unpack[ExecOptions]
    ) -> ExecResult:
        """Wait for the command, not for children that keep its output open; one that
        times out is left running (the caller kills the container when it must)."""
        return self.docker.exec(container, argv, **options)

    def lift_cpu_limit(self, container: str) -> None:
        """Let the container's processes use every CPU: freezing or killing a process
        needs it to run, and a throttled one may not get the CPU in time."""
        self.docker.lift_cpu_limit(container)

    def limit_cpus(self, container: str, cpus: float) -> None:
        """Put a CPU limit back on the container (after `lift_cpu_limit`)."""
        self.docker.limit_cpus(container, cpus)

    def freeze(self, container: str) -> None:
        """Freeze every process in the container (cgroup freezer); known to `made`, so a
        stopped run thaws a container it does not own."""
        with self.made.making(f"freezing {container[:12]}"):
            self.docker.pause(container)
            self.made.froze(container)

    def thaw(self, container: str) -> None:
        self.docker.unpause(container)
        self.made.thawed(container)

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
        self.made.removed_container(container)

    def state(self, container: str) -> ServiceState:
        state = self.docker.inspect_container(container).get("State") or {}
        health = (state.get("Health") or {}).get("Status")
        return ServiceState(str(state.get("Status", "")), health, state.get("ExitCode"))

    def logs_tail(self, container: str, lines: int = 20) -> str:
        return self.docker.container_logs(container, lines).decode("utf-8", "replace")

    # Containers another harness started ---------------------------------------------

    def find(self, labels: Mapping[str, str]) -> str:
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

    def started(self, container: str) -> StartedContainer:
        """The image a running container was started from, and what is bound into it."""
        return started_container(self.docker.inspect_container(container))

    def of_project(self, project_label: str, project: str, service_label: str) -> dict[str, str]:
        """The containers of a Compose project by service name."""
        found = self.docker.containers_labelled(f"{project_label}={project}")
        return {c.labels[service_label]: c.id for c in found if c.labels.get(service_label)}


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
    config = attrs.get("Config") or {}
    labels = config.get("Labels") if isinstance(config, dict) else None
    ident, name = attrs.get("Id"), attrs.get("Name")
    return StartedContainer(
        image,
        mounts,
        id=ident if isinstance(ident, str) else "",
        name=name.lstrip("/") if isinstance(name, str) else "",
        labels={str(k): str(v) for k, v in labels.items()} if isinstance(labels, dict) else {},
    )


def network_options(
    public: bool, services_network: str | None, aliases: Sequence[str]
) -> dict[str, Any]:
    """``containers.run`` options: on the services network (known there by ``aliases``)
    when there is one, else the default bridge when ``public``, else no network."""
    if services_network is None:
        return {"network_mode": "bridge" if public else "none"}
    return {"network": services_network, "aliases": list(aliases)}


def names_of(service: Service) -> tuple[str, ...]:
    """A service's names on its network: its own, and its ``container_name``."""
    if service.container_name and service.container_name != service.name:
        return (service.name, service.container_name)
    return (service.name,)


def _tmpfs_entry(entry: str) -> tuple[str, str]:
    path, _, options = entry.partition(":")
    return path, options
