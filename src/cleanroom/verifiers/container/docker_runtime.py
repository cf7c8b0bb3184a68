"""The Docker adapter: every call the container verifier makes to the daemon, through the SDK.

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
import tarfile
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import docker
import docker.errors
import requests

from cleanroom.verifiers.container import overlay, state_archive
from cleanroom.verifiers.container.reward import REWARD_CAP_BYTES, FileKind, RewardFile
from cleanroom.verifiers.container.tamper import Change, ChangeKind, Diff
from cleanroom.verifiers.container.task import Task

LABEL = "cleanroom.verify"
LABELS_ENV = "CLEANROOM_LABELS"  # extra labels, "key=value,key=value", for a whole process
IMAGE_REPOSITORY = "cleanroom-task"
KEEPALIVE = ("sleep", "infinity")
LOGS_TMPFS = "rw,size=64m,mode=0777"
OUTPUT_CAP_BYTES = 256 * 1024
BUILD_LOG_SHOWN = 4000
_POLL_S = 0.05
_INSPECT_EVERY_S = 0.25
# After the daemon says a command exited, its output may still be on its way (seen on a
# loaded machine); wait this long for the stream to end before deciding that a child
# left behind holds it open.
_DRAIN_AFTER_EXIT_S = 3.0
_READ_ATTEMPTS = 3
_READ_TIMEOUT_S = 10.0

# Reads one file as uid 0 the way a program in the container would see it (following
# links), without blocking on a FIFO and without reading past the cap. Exit 3: missing;
# 4: not a regular file (its type on stderr); otherwise stderr holds the size.
_READ_SCRIPT = r"""
p="$1"; cap="$2"
if [ ! -e "$p" ]; then exit 3; fi
if [ ! -f "$p" ]; then stat -L -c '%F' -- "$p" >&2; exit 4; fi
stat -L -c '%s' -- "$p" >&2
exec head -c "$cap" -- "$p"
"""


# Removes each state path, then makes each parent folder: ``clear PATH... -- PARENT...``.
_CLEAR_STATE_SCRIPT = r"""
making=0
for p in "$@"; do
  if [ "$p" = "--" ]; then making=1; continue; fi
  if [ "$making" = 1 ]; then mkdir -p -- "$p"; else rm -rf -- "$p"; fi
done
"""


class RuntimeUnavailable(Exception):
    """The Docker daemon could not be reached or refused a call; says which call."""


class ImageBuildFailed(Exception):
    """A task's ``environment/`` did not build; carries the end of the build log."""

    def __init__(self, tag: str, log: str) -> None:
        self.tag = tag
        self.log = log
        super().__init__(f"image {tag} did not build")


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
        env = task.config.environment
        return cls(env.network, env.memory_limit_mb, env.cpus, env.pids_limit)

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


@dataclass
class ExecResult:
    """What one command in a container did."""

    exit_code: int | None
    stdout: bytes = b""
    stderr: bytes = b""
    output: bytes = b""  # stdout and stderr interleaved as they arrived
    timed_out: bool = False
    seconds: float = 0.0


@dataclass
class _Collector:
    cap: int
    stdout: bytearray = field(default_factory=bytearray)
    stderr: bytearray = field(default_factory=bytearray)
    output: bytearray = field(default_factory=bytearray)
    error: BaseException | None = None

    def add(self, out: bytes | None, err: bytes | None) -> None:
        for chunk, buf in ((out, self.stdout), (err, self.stderr)):
            if chunk:
                buf.extend(chunk[: max(0, self.cap - len(buf))])
                self.output.extend(chunk[: max(0, self.cap - len(self.output))])


_build_locks: dict[str, threading.Lock] = {}
_build_locks_guard = threading.Lock()


@contextlib.contextmanager
def _docker_call(what: str) -> Iterator[None]:
    try:
        yield
    except docker.errors.APIError as exc:
        raise RuntimeUnavailable(f"{what}: {exc.explanation or exc}") from exc
    except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
        raise RuntimeUnavailable(f"{what}: Docker daemon not reachable ({exc})") from exc


class DockerRuntime:
    """Thin wrapper over one Docker client; every method is one effect."""

    def __init__(self, client: docker.DockerClient, labels: Mapping[str, str] | None = None):
        self.client = client
        self.api = client.api
        self.labels = {LABEL: "1", **(labels or {})}

    @classmethod
    def connect(cls, labels: Mapping[str, str] | None = None) -> DockerRuntime:
        """Connect to the daemon from the environment (``DOCKER_HOST`` or the local socket).

        Labels listed in ``CLEANROOM_LABELS`` are added to everything this runtime
        creates, so a caller can find and remove what a child process built.
        """
        where = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
        with _docker_call(f"connecting to the Docker daemon at {where}"):
            client = docker.from_env(timeout=300, max_pool_size=32)
            client.ping()
        return cls(client, {**labels_from_env(), **(labels or {})})

    # Images -------------------------------------------------------------------------

    def image_for(self, task: Task) -> tuple[str, bool]:
        """The task's image tag, built unless an image for this ``environment/`` exists.

        Returns the tag and whether it was built now. The tag carries a hash of every
        file in ``environment/`` (names, modes, contents), so an edit means a new image.
        """
        tag = f"{IMAGE_REPOSITORY}/{_safe_name(task.name)}:{environment_hash(task.environment_dir)}"
        with _build_locks_guard:
            lock = _build_locks.setdefault(tag, threading.Lock())
        with lock:
            with _docker_call(f"looking up image {tag}"):
                try:
                    self.client.images.get(tag)
                    return tag, False
                except docker.errors.ImageNotFound:
                    pass
            self._build(task, tag)
            return tag, True

    def image_workdir(self, image: str) -> str | None:
        """The image's own working folder (its Dockerfile's last ``WORKDIR``), if any."""
        with _docker_call(f"inspecting image {image}"):
            config = self.api.inspect_image(image).get("Config") or {}
        return config.get("WorkingDir") or None

    def _build(self, task: Task, tag: str) -> None:
        try:
            self.client.images.build(
                path=str(task.environment_dir),
                tag=tag,
                rm=True,
                forcerm=True,
                pull=False,
                labels=self.labels,
                timeout=int(task.config.environment.build_timeout_sec),
            )
        except docker.errors.BuildError as exc:
            raise ImageBuildFailed(tag, _build_log_text(exc.build_log, str(exc))) from exc
        except docker.errors.APIError as exc:
            if exc.status_code is not None and 400 <= exc.status_code < 500:
                raise ImageBuildFailed(tag, str(exc.explanation or exc)) from exc
            raise RuntimeUnavailable(f"building {tag}: {exc.explanation or exc}") from exc
        except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
            raise RuntimeUnavailable(
                f"building {tag}: Docker daemon not reachable ({exc})"
            ) from exc

    def remove_image(self, image: str) -> None:
        """Remove an image; missing is fine."""
        with _docker_call(f"removing image {image}"), contextlib.suppress(docker.errors.NotFound):
            self.api.remove_image(image, force=True)

    # Containers ---------------------------------------------------------------------

    def start_agent_container(
        self,
        image: str,
        limits: Limits,
        workdir: str | None,
        name_hint: str,
        binds: Mapping[Path, str] | None = None,
    ) -> str:
        """Start the task container idle, no network unless asked, ``/logs`` a tmpfs.

        ``/logs`` is a tmpfs the agent can write (as in Harbor, where it is a shared
        folder): the naive modes need the planted files to be there. ``binds`` puts host
        folders inside it (sealed mode watches the reward folder from the host).
        """
        volumes = {str(h): {"bind": d, "mode": "rw"} for h, d in (binds or {}).items()}
        with _docker_call(f"starting a container from {image}"):
            container = self.client.containers.run(
                image,
                list(KEEPALIVE),
                detach=True,
                network_mode="bridge" if limits.network else "none",
                tmpfs={"/logs": LOGS_TMPFS},
                volumes=volumes,
                working_dir=workdir or "",
                labels={**self.labels, "cleanroom.role": "agent", "cleanroom.task": name_hint},
                **limits.host_config(),
            )
        return str(container.id)

    def start_verifier_container(
        self,
        image: str,
        limits: Limits,
        workdir: str | None,
        binds: Mapping[Path, str],
        join_network_of: str | None,
        read_only: Sequence[str] = (),
    ) -> str:
        """Start a fresh idle verifier container from the pristine task image.

        Host folders are bound in (``read_only`` names those bound read-only). No network,
        unless ``join_network_of`` names a container whose network namespace (and so its
        localhost) this one joins. It cannot make device nodes.
        """
        network = f"container:{join_network_of}" if join_network_of else "none"
        volumes = {
            str(host): {"bind": dest, "mode": "ro" if dest in read_only else "rw"}
            for host, dest in binds.items()
        }
        with _docker_call(f"starting a verifier container from {image}"):
            container = self.client.containers.run(
                image,
                list(KEEPALIVE),
                detach=True,
                network_mode=network,
                volumes=volumes,
                cap_drop=["MKNOD"],
                working_dir=workdir or "",
                labels={**self.labels, "cleanroom.role": "verifier"},
                **limits.host_config(),
            )
        return str(container.id)

    def pause(self, container: str) -> None:
        """Freeze every process in the container (cgroup freezer)."""
        with _docker_call(f"pausing {container[:12]}"):
            self.api.pause(container)

    def unpause(self, container: str) -> None:
        """Thaw a paused container."""
        with _docker_call(f"unpausing {container[:12]}"):
            self.api.unpause(container)

    def changes(self, container: str) -> Diff:
        """The container's filesystem diff and how it was read (``overlay`` or ``api``).

        The diff is evidence, never a gate: when neither the writable layer nor the API
        can list it (the daemon's own walk fails on trees deeper than PATH_MAX), the
        result is empty, with ``source`` ``unreadable`` and the reason.
        """
        with _docker_call(f"inspecting {container[:12]}"):
            graph = self.api.inspect_container(container).get("GraphDriver") or {}
        try:
            return overlay.changes_from_graph_driver(graph)
        except overlay.OverlayUnreadable as exc:
            unreadable = str(exc)
        try:
            with _docker_call(f"diffing {container[:12]}"):
                raw = self.api.diff(container) or []
        except RuntimeUnavailable as exc:
            return Diff([], "unreadable", f"{unreadable}; {exc}"[:500])
        return Diff([Change(d["Path"], ChangeKind.from_docker(d["Kind"])) for d in raw], "api")

    # State carried from the agent's container to the verifier's -----------------------

    def export_state(self, container: str, path: str, cap: int) -> StateCopy:
        """Take ``path`` from a (paused) container as a checked tar archive.

        Raises `StateTooLarge` past ``cap`` bytes, and `StateArchiveError` when what
        arrived cannot be read as an archive (a transport failure is `RuntimeUnavailable`
        instead); device nodes and sockets are dropped and listed; a name near PATH_MAX
        is reported in ``too_long``.
        """
        with _docker_call(f"archiving {path} in {container[:12]}"):
            try:
                chunks, info = self.api.get_archive(container, path)
            except docker.errors.NotFound:
                return StateCopy(path, "missing")
            kind = _kind_of_mode(int(info.get("mode", 0)))
            spooled: IO[bytes] = tempfile.TemporaryFile(prefix="cleanroom-state-")  # noqa: SIM115
            try:
                size = state_archive.copy_capped(chunks, spooled, cap)
            except BaseException:
                spooled.close()
                raise
        if size is None:
            spooled.close()
            raise StateTooLarge(path, cap)
        copy = StateCopy(path, kind, spooled)
        try:
            found = state_archive.scan(state_archive.rewind(spooled))
            copy.too_long = found.too_long
            copy.dropped = found.dropped[: state_archive.SHOWN]
            if found.dropped:
                filtered: IO[bytes] = tempfile.TemporaryFile(prefix="cleanroom-state-")  # noqa: SIM115
                state_archive.without_dropped(state_archive.rewind(spooled), filtered)
                spooled.close()
                copy.archive = filtered
        except state_archive.StateArchiveError:
            copy.close()
            raise
        return copy

    def install_state(self, container: str, copies: Sequence[StateCopy]) -> None:
        """Replace each state path in the verifier's container by the agent's version.

        What the pristine image holds at a state path is removed first, so the verifier
        sees the agent's state exactly (a file the agent deleted stays deleted).
        """
        if not copies:
            return
        paths = [c.path for c in copies]
        parents = sorted({posixpath.dirname(p) or "/" for p in paths})
        cleared = self.exec(
            container,
            ["sh", "-c", _CLEAR_STATE_SCRIPT, "clear", *paths, "--", *parents],
            user="0",
            workdir="/",
        )
        if cleared.exit_code != 0:
            raise RuntimeUnavailable(f"clearing state paths {paths}: {cleared.output[-300:]!r}")
        for copy in copies:
            if copy.archive is None:
                continue
            parent = posixpath.dirname(copy.path) or "/"
            copy.archive.seek(0)
            with _docker_call(f"installing {copy.path} in {container[:12]}"):
                if not self.api.put_archive(container, parent, copy.archive):
                    raise RuntimeUnavailable(f"installing {copy.path} was refused")

    def kill(self, container: str) -> None:
        """SIGKILL every process in the container; a container already stopped is fine."""
        with _docker_call(f"killing {container[:12]}"), contextlib.suppress(docker.errors.APIError):
            self.api.kill(container)

    def remove(self, container: str) -> None:
        """Remove a container and its anonymous volumes, whatever its state."""
        with (
            _docker_call(f"removing {container[:12]}"),
            contextlib.suppress(docker.errors.NotFound),
        ):
            self.api.remove_container(container, force=True, v=True)

    def remove_labelled(self, labels: Mapping[str, str]) -> int:
        """Remove every container, then every image, carrying all of ``labels``."""
        filters = {"label": [f"{k}={v}" for k, v in labels.items()]}
        removed = 0
        with _docker_call("listing labelled containers"):
            containers = self.api.containers(all=True, filters=filters, quiet=True)
        for c in containers:
            self.remove(c["Id"])
            removed += 1
        with _docker_call("listing labelled images"):
            images = self.api.images(filters=filters, quiet=True)
        for image in images:
            self.remove_image(image)
            removed += 1
        return removed

    # Files and commands -------------------------------------------------------------

    def put_dir(self, container: str, source: Path, dest: str) -> None:
        """Copy a host folder into the container at ``dest`` (merged into what is there)."""
        parent, name = os.path.split(dest.rstrip("/"))
        data = _tar_folder(source, name)
        with _docker_call(f"copying {source.name} into {container[:12]}:{dest}"):
            if not self.api.put_archive(container, parent or "/", data):
                raise RuntimeUnavailable(f"copying into {container[:12]}:{dest} was refused")

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
        start = time.monotonic()
        with _docker_call(f"running {argv[0]} in {container[:12]}"):
            exec_id = self.api.exec_create(
                container,
                list(argv),
                user=user or "",
                environment=dict(env or {}),
                workdir=workdir,
            )["Id"]
            stream = self.api.exec_start(exec_id, stream=True, demux=True)
        sink = _Collector(cap)
        reader = threading.Thread(target=_drain, args=(stream, sink), daemon=True)
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
            if now >= next_inspect:
                next_inspect = now + _INSPECT_EVERY_S
                # The command exited but a child it left behind keeps the stream open.
                if not self._exec_running(exec_id):
                    reader.join(_DRAIN_AFTER_EXIT_S)
                    break
        if sink.error is not None and not isinstance(sink.error, requests.RequestException):
            raise RuntimeUnavailable(f"reading output of {argv[0]}: {sink.error}")
        return self._finished(exec_id, sink, start, timed_out=False)

    def _exec_running(self, exec_id: str) -> bool:
        with _docker_call("inspecting a command"):
            return bool(self.api.exec_inspect(exec_id).get("Running"))

    def _finished(
        self, exec_id: str, sink: _Collector, start: float, timed_out: bool
    ) -> ExecResult:
        code: int | None = None
        if not timed_out:
            with _docker_call("reading a command's exit code"):
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
        )

    def read_file(self, container: str, path: str, cap: int = REWARD_CAP_BYTES) -> RewardFile:
        """Observe a file inside a container as uid 0, following links as a program would.

        A read that returns fewer bytes than the file's size (the output lost on its way,
        or the file changing under the reader) is tried again; if it stays short the
        daemon's word cannot be trusted and `RuntimeUnavailable` says so.
        """
        short = ""
        for _ in range(_READ_ATTEMPTS):
            observed, short = self._read_once(container, path, cap)
            if not short:
                return observed
        raise RuntimeUnavailable(f"reading {path}: {short} in {_READ_ATTEMPTS} attempts")

    def _read_once(self, container: str, path: str, cap: int) -> tuple[RewardFile, str]:
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
            return RewardFile(path, FileKind.OTHER, note=note), ""
        if result.exit_code == 3:
            return RewardFile.missing(path), ""
        if result.exit_code == 4:
            note = result.stderr.decode(errors="replace").strip()
            return RewardFile(path, FileKind.OTHER, note=note), ""
        if result.exit_code != 0:
            raise RuntimeUnavailable(
                f"reading {path} exited {result.exit_code}: {result.output[-500:]!r}"
            )
        size = _int_or_none(result.stderr.decode(errors="replace").strip())
        data = result.stdout
        if size is None:
            return RewardFile(path, FileKind.REGULAR, data), "no size came back"
        if len(data) < min(size, cap + 1):
            return RewardFile(path, FileKind.REGULAR, data), (
                f"{len(data)} bytes came back of {size}"
            )
        if len(data) > cap or size > cap:
            return RewardFile(path, FileKind.OVERSIZE, data[:cap], max(size, len(data))), ""
        return RewardFile(path, FileKind.REGULAR, data, size), ""


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
    text = "".join(lines) or fallback
    return text[-BUILD_LOG_SHOWN:]


def _int_or_none(text: str) -> int | None:
    try:
        return int(text.splitlines()[-1]) if text else None
    except ValueError:
        return None
