"""The Docker layer: every call cleanroom makes to the Docker daemon goes through here.

One way to connect (`Docker.connect`), one translation of the SDK's and the transport's errors
(`translated`: every failure becomes a `DockerError` saying what was being done), one way
to run a command in a container and collect what it did (`Docker.exec`, `ExecResult`),
and the few other primitives the guests, the container verifier, the program containers,
the desktop image and orphan cleanup share. What a failure means (a guest error, an
``invalid`` outcome, a pool error) stays with the caller: each one opens its `Docker`
with its own subclass of `DockerError`, which every call then raises.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

import docker
import docker.errors
import requests
from docker.models.containers import _create_container_args

from cleanroom.exec_result import ExecResult

DEFAULT_HOST = "unix:///var/run/docker.sock"
# Podman's Docker-compatible API, as rootful `podman system service` serves it.
PODMAN_HOST = "unix:///run/podman/podman.sock"
OUTPUT_CAP_BYTES = 256 * 1024
# What a container's first process writes goes to the daemon's log on the host disk, and
# any process in the container that may open ``/proc/1/fd/1`` writes there too: a bound
# on it keeps an agent from filling the host's disk through its own container's log. The
# tail read back (a service that exits) is within it.
CONTAINER_LOG_MAX = "8m"
BOUNDED_LOG = {"type": "json-file", "config": {"max-size": CONTAINER_LOG_MAX, "max-file": "1"}}
_POLL_S = 0.05
_INSPECT_EVERY_S = 0.25
# After the daemon says a command exited, its output may still be on its way (seen on a
# loaded machine); wait this long for the stream to end before deciding that a child
# left behind holds it open.
_DRAIN_AFTER_EXIT_S = 3.0


class DockerError(Exception):
    """The Docker daemon could not be reached, or refused a call; says which call.

    ``status`` is the daemon's HTTP status when it answered (404: what the call named
    does not exist), None when it could not be reached.
    """

    status: int | None = None


class ImageBuildFailed(Exception):
    """An image did not build from its definition; carries the end of the build log."""

    def __init__(self, tag: str, log: str) -> None:
        self.tag = tag
        self.log = log
        super().__init__(f"image {tag} did not build")


@contextlib.contextmanager
def translated(what: str, error: type[DockerError] = DockerError) -> Iterator[None]:
    """Turn every Docker or transport failure inside into ``error`` saying what was tried."""
    try:
        yield
    except docker.errors.NotFound as exc:
        raise _error(error, f"{what}: not found ({exc.explanation or exc})", 404) from exc
    except docker.errors.APIError as exc:
        raise _error(error, f"{what}: {exc.explanation or exc}", exc.status_code) from exc
    except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
        raise _error(error, f"{what}: Docker daemon not reachable ({exc})", None) from exc


def _error(error: type[DockerError], message: str, status: int | None) -> DockerError:
    out = error(message)
    out.status = status
    return out


def anonymous_volume(target: str, empty: bool = False) -> Any:
    """A ``mounts`` entry for a fresh anonymous volume at ``target``, removed with its
    container when that is removed with its volumes. Docker fills a new volume with what
    the image holds at ``target``, unless ``empty``."""
    return docker.types.Mount(target, None, type="volume", no_copy=empty)


@dataclass(frozen=True)
class ContainerInfo:
    """A container (or network) found by label."""

    id: str
    name: str
    labels: dict[str, str]


class Docker:
    """One connection to the daemon; every method is one effect, failing as ``error``."""

    def __init__(
        self,
        client: Any,
        stream_api: Any,
        error: type[DockerError] = DockerError,
        *,
        podman: bool = False,
        host: str = "",
    ):
        self.client = client
        self.host = host  # where it connected (the daemon's address), for people and keys
        self.api = client.api
        self.stream_api = stream_api  # no read timeout: a command may be silent for long
        self.error = error
        # Podman answering the Docker API (its own calls where it has no compatible one).
        self.podman = podman

    @classmethod
    def connect(
        cls,
        timeout: int = 300,
        *,
        max_pool_size: int = 10,
        error: type[DockerError] = DockerError,
        host: str | None = None,
    ) -> Docker:
        """A client of the daemon at ``host``, else the one the environment names
        (``DOCKER_HOST`` or the local socket): Docker, or podman's Docker-compatible API.
        Raises ``error`` when the daemon does not answer. Calls time out after
        ``timeout`` seconds; a command's output is read without a limit (`exec` keeps its
        own)."""
        where = host or os.environ.get("DOCKER_HOST", DEFAULT_HOST)
        with translated(f"connecting to the container daemon at {where}", error):
            # From the environment unless a host is named (DOCKER_TLS_VERIFY and the rest).
            def client_of(**kwargs: Any) -> Any:
                if host is None:
                    return docker.from_env(max_pool_size=max_pool_size, **kwargs)
                return docker.DockerClient(base_url=host, max_pool_size=max_pool_size, **kwargs)

            client = client_of(timeout=timeout)
            client.ping()
            streams = client_of(timeout=None, version=client.api.api_version).api
            components = client.version().get("Components") or []
            podman = any("podman" in str(c.get("Name", "")).lower() for c in components)
        return cls(client, streams, error, podman=podman, host=where)

    def _call(self, what: str) -> contextlib.AbstractContextManager[None]:
        return translated(what, self.error)

    def fail(self, message: str) -> DockerError:
        """This connection's error for a call the daemon accepted but did not carry out."""
        return self.error(message)

    def close(self) -> None:
        """Close the connection; what it started keeps running."""
        with contextlib.suppress(Exception):
            self.client.close()
        with contextlib.suppress(Exception):
            self.stream_api.close()

    # Images -------------------------------------------------------------------------

    def inspect_image(self, image: str) -> dict[str, Any] | None:
        """The image's attributes, or None if there is no such image."""
        try:
            with self._call(f"inspecting image {image}"):
                return dict(self.api.inspect_image(image))
        except DockerError as exc:
            if exc.status == 404:
                return None
            raise

    def build_image(
        self,
        tag: str,
        *,
        labels: Mapping[str, str],
        timeout: int,
        log_chars: int,
        path: str | None = None,
        fileobj: IO[bytes] | None = None,
        dockerfile: str | None = None,
        buildargs: Mapping[str, str] | None = None,
    ) -> None:
        """Build ``tag`` from a folder (``path``) or a Dockerfile (``fileobj``), never
        pulling. `ImageBuildFailed` with the last ``log_chars`` of the log when a step
        fails; a refused request is an ``error`` whose ``status`` says whose fault it was."""
        with self._call(f"building {tag}"):
            try:
                self.client.images.build(
                    path=path,
                    fileobj=fileobj,
                    tag=tag,
                    rm=True,
                    forcerm=True,
                    pull=False,
                    labels=dict(labels),
                    timeout=timeout,
                    dockerfile=dockerfile,
                    buildargs=dict(buildargs) if buildargs else None,
                )
            except docker.errors.BuildError as exc:
                log = _build_log_text(exc.build_log, str(exc))
                raise ImageBuildFailed(tag, log[-log_chars:]) from exc

    def pull_image(self, image: str) -> None:
        """Pull ``image`` from its registry (a tag of ``latest`` when none is given)."""
        repository, tag = _split_tag(image)
        with self._call(f"pulling {image}"):
            self.api.pull(repository, tag=tag)

    def tag_image(self, image: str, reference: str) -> None:
        """Give ``image`` one more name, ``reference`` (``repository:tag``), moving that
        name from any image that had it."""
        repository, tag = _split_tag(reference)
        with self._call(f"tagging {image} as {reference}"):
            self.api.tag(image, repository, tag=tag, force=True)

    def remove_image(self, image: str) -> None:
        """Remove an image; missing is fine."""
        with self._missing_is_fine(f"removing image {image}"):
            self.api.remove_image(image, force=True)

    def images_labelled(self, *labels: str) -> list[str]:
        """The ids of every image carrying all ``labels`` (``key`` or ``key=value``)."""
        with self._call("listing labelled images"):
            return [str(i) for i in self.api.images(filters={"label": list(labels)}, quiet=True)]

    # Containers ---------------------------------------------------------------------

    def run_container(
        self,
        image: str,
        command: Sequence[str] | None,
        *,
        aliases: Sequence[str] = (),
        **options: Any,
    ) -> str:
        """Create and start a detached container (the SDK's ``containers.run`` options,
        never pulling); it is removed again, with its anonymous volumes, if it does not start.
        ``aliases`` are its names on the user-defined ``network`` it starts on. Its log on
        the host is bounded (`BOUNDED_LOG`) unless ``log_config`` says otherwise. Returns
        its id."""
        options.setdefault("log_config", BOUNDED_LOG)
        with self._call(f"starting a container from {image}"):
            if aliases:
                endpoint = self.api.create_endpoint_config(aliases=list(aliases))
                options["networking_config"] = {options["network"]: endpoint}
            container = self._create(image, command, detach=True, **options)
            try:
                container.start()
            except BaseException:
                with contextlib.suppress(Exception):
                    container.remove(force=True, v=True)
                raise
        return str(container.id)

    def _create(self, image: str, command: Sequence[str] | None, **options: Any) -> Any:
        """The SDK's ``containers.create``, and ``masked_paths`` (what of ``/proc`` and
        ``/sys`` the container sees empty, in place of Docker's defaults), which the
        daemon takes but the SDK does not name."""
        masked = options.pop("masked_paths", None)
        argv = list(command) if command is not None else None
        if masked is None:
            return self.client.containers.create(image, argv, **options)
        options |= {"image": image, "command": argv, "version": self.api._version}
        create = _create_container_args(options)
        create["host_config"]["MaskedPaths"] = list(masked)
        return self.client.containers.get(self.api.create_container(**create)["Id"])

    def create_container(self, image: str, command: Sequence[str] | None, **options: Any) -> str:
        """Create a container without starting it (its files can be archived); returns its id."""
        with self._call(f"creating a container from {image}"):
            container = self.client.containers.create(
                image,
                list(command) if command is not None else None,
                **options,
            )
        return str(container.id)

    def inspect_container(self, container: str) -> dict[str, Any]:
        """The container's attributes (state, config, graph driver)."""
        with self._call(f"inspecting {container[:12]}"):
            return dict(self.api.inspect_container(container))

    def lift_cpu_limit(self, container: str) -> None:
        """Let the container's processes use every CPU of the machine again.

        The SDK's ``update_container`` cannot set the ``NanoCpus`` a container was created
        with, so this posts the Engine API's update call itself.
        """
        self.limit_cpus(container, float(os.cpu_count() or 1))

    def limit_cpus(self, container: str, cpus: float) -> None:
        """Let the container's processes use ``cpus`` CPUs (its ``NanoCpus``)."""
        with self._call(f"setting the CPU limit of {container[:12]}"):
            data: dict[str, Any]
            if self.podman:  # podman 4 has no compatible update call, only its own
                url = self.api._url("/libpod/containers/{0}/update", container)
                period = 100_000
                data = {"cpu": {"quota": int(cpus * period), "period": period}}
            else:
                url = self.api._url("/containers/{0}/update", container)
                data = {"NanoCpus": int(cpus * 10**9)}
            response = self.api._post_json(url, data=data)
            self.api._raise_for_status(response)

    def pause(self, container: str) -> None:
        """Freeze every process in the container (cgroup freezer)."""
        with self._call(f"pausing {container[:12]}"):
            self.api.pause(container)

    def unpause(self, container: str) -> None:
        """Thaw a paused container."""
        with self._call(f"unpausing {container[:12]}"):
            self.api.unpause(container)

    def kill(self, container: str) -> None:
        """SIGKILL every process in the container."""
        with self._call(f"killing {container[:12]}"):
            self.api.kill(container)

    def diff(self, container: str) -> list[dict[str, Any]]:
        """The daemon's list of the container's filesystem changes."""
        with self._call(f"diffing {container[:12]}"):
            return list(self.api.diff(container) or [])

    def remove_container(self, container: str, *, volumes: bool = False) -> None:
        """Remove a container (and its anonymous ``volumes``) whatever its state; missing
        is fine."""
        with self._missing_is_fine(f"removing {container[:12]}"):
            self.api.remove_container(container, force=True, v=volumes)

    def containers_labelled(self, *labels: str) -> list[ContainerInfo]:
        """Every container, running or not, carrying all ``labels`` (``key`` or
        ``key=value``)."""
        with self._call("listing labelled containers"):
            found = self.api.containers(all=True, filters={"label": list(labels)})
        return [
            ContainerInfo(
                str(c["Id"]), str((c.get("Names") or ["/"])[0]).lstrip("/"), c.get("Labels") or {}
            )
            for c in found
        ]

    def has_container(self, container: str) -> bool:
        """Whether the daemon holds ``container`` (a name or ID), running or not."""
        try:
            self.inspect_container(container)
        except DockerError as exc:
            if exc.status == 404:
                return False
            raise
        return True

    def daemon_id(self) -> str:
        """The daemon's own ID (``docker info``'s ``ID``), the same whichever client or
        machine asks: two clients that get the same answer reach the same daemon. A
        daemon that has none (podman) is named by its host; "" when it says neither."""
        with self._call("asking the daemon for its ID"):
            info = dict(self.client.info())
        found = str(info.get("ID") or "")
        host = str(info.get("Name") or "")
        return found or (f"host:{host}" if host else "")

    def container_logs(self, container: str, tail: int = 40) -> bytes:
        """The last ``tail`` lines a container printed (stdout and stderr)."""
        with self._call(f"reading the logs of {container[:12]}"):
            return bytes(self.api.logs(container, tail=tail))

    # Networks -----------------------------------------------------------------------

    def create_network(self, name: str, *, internal: bool, labels: Mapping[str, str]) -> str:
        """Create a bridge network; ``internal``: with no route out of it. Returns its id."""
        with self._call(f"creating network {name}"):
            created = self.api.create_network(
                name, driver="bridge", internal=internal, labels=dict(labels)
            )
        return str(created["Id"])

    def connect_network(self, network: str, container: str, aliases: Sequence[str] = ()) -> None:
        """Attach a container to one more network, known there by ``aliases``."""
        with self._call(f"connecting {container[:12]} to {network[:12]}"):
            self.api.connect_container_to_network(container, network, aliases=list(aliases) or None)

    def disconnect_network(self, network: str, container: str) -> None:
        """Detach a container from a network; a container or network already gone is fine."""
        with self._missing_is_fine(f"disconnecting {container[:12]} from {network[:12]}"):
            self.api.disconnect_container_from_network(container, network, force=True)

    def remove_network(self, network: str) -> None:
        """Remove a network; missing is fine."""
        with self._missing_is_fine(f"removing network {network[:12]}"):
            self.api.remove_network(network)

    def networks_labelled(self, *labels: str) -> list[str]:
        """The ids of every network carrying all ``labels`` (``key`` or ``key=value``)."""
        return [n.id for n in self.networks_found(*labels)]

    def networks_found(self, *labels: str) -> list[ContainerInfo]:
        """Every network carrying all ``labels``, with its name and labels."""
        with self._call("listing labelled networks"):
            found = self.api.networks(filters={"label": list(labels)})
        return [
            ContainerInfo(str(n["Id"]), str(n.get("Name") or ""), n.get("Labels") or {})
            for n in found
        ]

    # Files --------------------------------------------------------------------------

    def get_archive(self, container: str, path: str) -> tuple[Iterator[bytes], dict[str, Any]]:
        """``path`` in the container as tar chunks, and its stat (``mode``, ``size``).

        Raises ``error`` with ``status`` 404 when the path (or the container) does not
        exist; a failure while the chunks arrive is ``error`` too.
        """
        what = f"archiving {path} in {container[:12]}"
        with self._call(what):
            chunks, stat = self.api.get_archive(container, as_bytes(path))
        return self._translated_chunks(chunks, what), dict(stat)

    def stat_path(self, container: str, path: str | bytes) -> dict[str, Any] | None:
        """The daemon's stat of ``path`` in the container (``mode``, ``linkTarget``: a
        link's target evaluated in the container's root), or None when nothing is there.
        Nothing runs in the container and no content is sent."""
        what = f"looking at {path!r} in {container[:12]}"
        with self._call(what):
            res = self.api.head(
                self.api._url("/containers/{0}/archive", container),
                params={"path": as_bytes(path)},
            )
            if res.status_code == 404:
                return None
            self.api._raise_for_status(res)
        encoded = res.headers.get("x-docker-container-path-stat")
        if not encoded:
            raise self.fail(f"{what}: the daemon sent no stat")
        return dict(json.loads(base64.b64decode(encoded)))

    def _translated_chunks(self, chunks: Iterable[bytes], what: str) -> Iterator[bytes]:
        with self._call(what):
            yield from chunks

    def put_archive(self, container: str, folder: str, data: bytes | IO[bytes]) -> None:
        """Unpack a tar archive into ``folder`` in the container."""
        with self._call(f"copying into {container[:12]}:{folder}"):
            accepted = self.api.put_archive(container, as_bytes(folder), data)
        if not accepted:
            raise self.fail(f"copying into {container[:12]}:{folder} was refused")

    # Commands -----------------------------------------------------------------------

    def exec_inspect(self, exec_id: str) -> dict[str, Any]:
        """What the daemon knows of a command: ``Running``, ``ExitCode``, host ``Pid``."""
        with self._call("inspecting a command"):
            return dict(self.api.exec_inspect(exec_id))

    def _exec_create(
        self,
        container: str,
        argv: Sequence[str],
        user: str | None,
        env: Mapping[str, str] | None,
        workdir: str | None,
        output: bool = True,
    ) -> str:
        with self._call(f"running {argv[0]} in {container[:12]}"):
            return str(
                self.api.exec_create(
                    container,
                    list(argv),
                    stdout=output,
                    stderr=output,
                    user=user or "",
                    environment=dict(env) if env else None,
                    workdir=workdir,
                )["Id"]
            )

    def spawn(
        self,
        container: str,
        argv: Sequence[str],
        *,
        user: str | None = None,
        env: Mapping[str, str] | None = None,
        workdir: str | None = None,
    ) -> str:
        """Start a command and return its exec id at once; its output goes nowhere."""
        exec_id = self._exec_create(container, argv, user, env, workdir, output=False)
        with self._call(f"starting {argv[0]} in {container[:12]}"):
            self.api.exec_start(exec_id, detach=True)
        return exec_id

    def stream(
        self,
        container: str,
        argv: Sequence[str],
        *,
        user: str | None = None,
        env: Mapping[str, str] | None = None,
        workdir: str | None = None,
    ) -> tuple[str, Iterator[bytes]]:
        """Start a command; its exec id and its output (stdout and stderr as they come)."""
        exec_id = self._exec_create(container, argv, user, env, workdir)
        with self._call(f"starting {argv[0]} in {container[:12]}"):
            chunks = self.stream_api.exec_start(exec_id, stream=True)
        return exec_id, chunks

    def exec(
        self,
        container: str,
        argv: Sequence[str],
        *,
        user: str | None = None,
        env: Mapping[str, str] | None = None,
        workdir: str | None = None,
        timeout: float | None = None,
        cap: int | None = OUTPUT_CAP_BYTES,
        wait_for_children: bool = False,
    ) -> ExecResult:
        """Run a command and wait for it (not for children that keep its output open,
        unless ``wait_for_children``: then until the output is closed, as a pipe on the
        host would be).

        Each of stdout, stderr and the interleaved output keeps its first ``cap`` bytes
        (all of them with None). On timeout the command is left running and ``timed_out``
        is set: the caller decides what that means and what to kill.
        """
        start = time.monotonic()
        exec_id = self._exec_create(container, argv, user, env, workdir)
        with self._call(f"running {argv[0]} in {container[:12]}"):
            stream = self.stream_api.exec_start(exec_id, stream=True, demux=True)
        sink = _Collector(cap)
        reader = threading.Thread(
            target=_drain, args=(stream, sink), daemon=True, name=f"exec-{exec_id[:12]}"
        )
        reader.start()
        deadline = None if timeout is None else start + timeout
        next_inspect = start + _INSPECT_EVERY_S
        while True:
            reader.join(_POLL_S)
            now = time.monotonic()
            if not reader.is_alive():
                break
            if deadline is not None and now >= deadline:
                return self._finished(exec_id, sink, start, timed_out=True)
            if not wait_for_children and now >= next_inspect:
                next_inspect = now + _INSPECT_EVERY_S
                # The command exited but a child it left behind keeps the stream open.
                if not self.exec_inspect(exec_id).get("Running"):
                    reader.join(_DRAIN_AFTER_EXIT_S)
                    break
        if sink.error is not None and not isinstance(sink.error, requests.RequestException):
            raise self.fail(f"reading output of {argv[0]}: {sink.error}")
        return self._finished(exec_id, sink, start, timed_out=False)

    def _finished(
        self, exec_id: str, sink: _Collector, start: float, timed_out: bool
    ) -> ExecResult:
        code: int | None = None
        if not timed_out:
            with self._call("reading a command's exit code"):
                for _ in range(100):
                    info = self.api.exec_inspect(exec_id)
                    if not info.get("Running"):
                        code = info.get("ExitCode")
                        break
                    time.sleep(0.01)
        return ExecResult(
            code,
            bytes(sink.stdout),
            bytes(sink.stderr),
            bytes(sink.output),
            timed_out,
            time.monotonic() - start,
            exec_id,
        )

    @contextlib.contextmanager
    def _missing_is_fine(self, what: str) -> Iterator[None]:
        try:
            with self._call(what):
                yield
        except DockerError as exc:
            if exc.status != 404:
                raise


def as_bytes(path: str | bytes) -> bytes:
    """A path as the bytes it names on disk (a name that is not UTF-8 came in as
    surrogate escapes), for the API's query strings, which carry any bytes."""
    return path if isinstance(path, bytes) else path.encode("utf-8", "surrogateescape")


def _split_tag(image: str) -> tuple[str, str]:
    """``repo[:tag][@digest]`` into what the pull call takes: a digest, else the tag."""
    if "@" in image:
        repository, digest = image.split("@", 1)
        return repository, digest
    name, _, tag = image.rpartition(":")
    if name and "/" not in tag:
        return name, tag
    return image, "latest"


@dataclass
class _Collector:
    cap: int | None
    stdout: bytearray = field(default_factory=bytearray)
    stderr: bytearray = field(default_factory=bytearray)
    output: bytearray = field(default_factory=bytearray)
    error: BaseException | None = None

    def add(self, out: bytes | None, err: bytes | None) -> None:
        for chunk, buf in ((out, self.stdout), (err, self.stderr)):
            if chunk:
                buf.extend(chunk[: self._room(buf)])
                self.output.extend(chunk[: self._room(self.output)])

    def _room(self, buf: bytearray) -> int | None:
        return None if self.cap is None else max(0, self.cap - len(buf))


def _drain(stream: Any, sink: _Collector) -> None:
    try:
        for out, err in stream:
            sink.add(out, err)
    except BaseException as exc:  # reported by the waiting thread, never lost
        sink.error = exc


def _build_log_text(log: Any, fallback: str) -> str:
    lines: list[str] = []
    for entry in log or []:
        if isinstance(entry, dict):
            text = entry.get("stream") or entry.get("error") or ""
            lines.append(str(text))
    return "".join(lines) or fallback
