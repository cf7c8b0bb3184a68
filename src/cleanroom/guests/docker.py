"""The ``docker:<container>`` guest: commands run through ``docker exec`` in a container.

Everything goes through the Docker SDK's low-level API. A command that outlives its limit
is killed through the host pid the daemon reports (we run on the daemon's host), falling
back to a ``kill`` inside the container when the host refuses.
"""

from __future__ import annotations

import contextlib
import io
import posixpath
import signal
import tarfile
import threading
import time
from collections.abc import Iterator
from typing import Any

import docker
import docker.errors
import requests

from cleanroom.guests.base import (
    DESKTOP_SKELETON,
    Command,
    CommandNotStarted,
    ExecResult,
    Guest,
    GuestError,
    GuestTimeout,
    resolve_path,
    to_argv,
)
from cleanroom.lifecycle import signal_group

_CONTROL_TIMEOUT_S = 60
_KEEPALIVE = ["sleep", "infinity"]
_FRESH_LABEL = "cleanroom.guest"
_SYMLINK_DEPTH = 8
_SHORT_S = 30.0


class ContainerUnavailable(GuestError):
    """The container is missing or stopped, or the Docker daemon cannot be reached."""


@contextlib.contextmanager
def _docker_errors(what: str) -> Iterator[None]:
    """Turn every Docker or transport failure into a `GuestError` saying what was tried."""
    try:
        yield
    except docker.errors.NotFound as exc:
        raise ContainerUnavailable(f"{what}: not found ({exc.explanation or exc})") from exc
    except docker.errors.APIError as exc:
        raise ContainerUnavailable(f"{what}: {exc.explanation or exc}") from exc
    except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
        raise ContainerUnavailable(f"{what}: Docker daemon not reachable ({exc})") from exc


def _connect(timeout: int | None) -> docker.APIClient:
    with _docker_errors("connecting to Docker"):
        return docker.from_env(timeout=timeout).api


def _kill_host_tree(pid: int) -> bool:
    """Kill the exec'd process and its group from the host; False if the host refuses."""
    return signal_group(pid, signal.SIGKILL)  # runc makes each exec a group leader


def _namespaced_pid(pid: int) -> int | None:
    """The pid a host process has inside its container's pid namespace, if visible."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("NSpid:"):
                    return int(line.split()[-1])
    except (OSError, ValueError):
        return None
    return None


class DockerGuest(Guest):
    """A running container, reached through the Docker daemon."""

    kind = "docker"

    def __init__(self, container: str, *, user: str | None = None, home: str | None = None) -> None:
        self._name = container
        self._user = user
        self._api = _connect(_CONTROL_TIMEOUT_S)
        # Exec output is read by a worker thread that we time out ourselves.
        self._stream_api = _connect(None)
        self._owned = False
        with _docker_errors(f"inspecting container {container!r}"):
            self._attrs: dict[str, Any] = self._api.inspect_container(container)
        self._id: str = self._attrs["Id"]
        self._ids: tuple[int, int] | None = None
        self._explicit_home = home
        self._home = ""  # unknown until the container tells us
        self._home = home if home is not None else self._ask_home()
        self._ensure_home()

    @property
    def home(self) -> str:
        return self._home

    def _ask_home(self) -> str:
        result = self._run(["/bin/sh", "-c", 'printf %s "$HOME"'], _SHORT_S, self._user, "/")
        return result.stdout.decode() or "/"

    def _ensure_home(self) -> None:
        """A missing home is created with the desktop skeleton, as a fresh account has."""
        probe = self._run(["test", "-d", self._home], _SHORT_S, self._user, "/")
        if probe.returncode == 0:
            return
        folders = [self._home] + [posixpath.join(self._home, d) for d in DESKTOP_SKELETON]
        made = self._run(["mkdir", "-p", *folders], _SHORT_S, "0", "/")
        if made.returncode != 0:
            raise GuestError(f"could not create home {self._home}: {made.stderr.decode()}")
        uid, gid = self._user_ids()
        owned = self._run(["chown", f"{uid}:{gid}", *folders], _SHORT_S, "0", "/")
        if owned.returncode != 0:
            raise GuestError(f"could not chown home {self._home}: {owned.stderr.decode()}")

    def _user_ids(self) -> tuple[int, int]:
        if self._ids is None:
            uid = self._run(["id", "-u"], _SHORT_S, self._user, "/")
            gid = self._run(["id", "-g"], _SHORT_S, self._user, "/")
            try:
                self._ids = (int(uid.stdout), int(gid.stdout))
            except ValueError as exc:
                raise GuestError(f"cannot tell the uid of the guest user: {uid.stderr!r}") from exc
        return self._ids

    def _run(
        self, argv: list[str], timeout: float, user: str | None, workdir: str | None
    ) -> ExecResult:
        # An explicit home must win over the passwd entry, as HOME does for a login.
        env = {"HOME": self._home} if user == self._user and self._home else None
        with _docker_errors(f"exec in container {self._name!r}"):
            exec_id = self._api.exec_create(
                self._id,
                argv,
                stdout=True,
                stderr=True,
                user=user or "",
                workdir=workdir if workdir is not None else self._home,
                environment=env,
            )["Id"]
        started = time.monotonic()
        box: dict[str, Any] = {}

        def pump() -> None:
            try:
                box["out"] = self._stream_api.exec_start(exec_id, demux=True)
            except BaseException as exc:
                box["error"] = exc

        worker = threading.Thread(target=pump, daemon=True, name=f"exec-{exec_id[:12]}")
        worker.start()
        worker.join(timeout)
        if worker.is_alive():
            self._kill_exec(exec_id)
            worker.join(_SHORT_S)
            raise GuestTimeout(argv, timeout)
        if "error" in box:
            with _docker_errors(f"exec in container {self._name!r}"):
                raise box["error"]
        stdout, stderr = box["out"]
        with _docker_errors(f"exec in container {self._name!r}"):
            info = self._api.exec_inspect(exec_id)
        stdout, stderr = stdout or b"", stderr or b""
        if not info.get("Pid") and stdout.startswith(b"OCI runtime exec failed"):
            raise CommandNotStarted(argv, stdout.decode(errors="replace").strip())
        return ExecResult(int(info["ExitCode"]), stdout, stderr, time.monotonic() - started)

    def _kill_exec(self, exec_id: str) -> None:
        pid = 0
        for _ in range(20):  # the process may not have been given a pid yet
            with _docker_errors(f"inspecting exec in {self._name!r}"):
                pid = int(self._api.exec_inspect(exec_id).get("Pid") or 0)
            if pid:
                break
            time.sleep(0.05)
        if not pid or _kill_host_tree(pid):
            return
        inner = _namespaced_pid(pid)
        if inner is not None:
            self._run(["kill", "-9", f"-{inner}"], _SHORT_S, "0", "/")

    def exec(
        self, command: Command, *, shell: bool, timeout: float, user: str | None = None
    ) -> ExecResult:
        try:
            argv = to_argv(command, shell=shell)
        except ValueError as exc:
            raise CommandNotStarted(command, str(exc)) from exc
        try:
            return self._run(argv, timeout, user if user is not None else self._user, None)
        except GuestTimeout:
            raise GuestTimeout(command, timeout) from None

    def spawn(self, command: Command, *, shell: bool, user: str | None = None) -> None:
        try:
            argv = to_argv(command, shell=shell)
        except ValueError as exc:
            raise CommandNotStarted(command, str(exc)) from exc
        who = user if user is not None else self._user
        with _docker_errors(f"spawn in container {self._name!r}"):
            exec_id = self._api.exec_create(
                self._id, argv, user=who or "", workdir=self._home, stdout=False, stderr=False
            )["Id"]
            self._api.exec_start(exec_id, detach=True)

    def read_file(self, path: str) -> bytes:
        return self._read(resolve_path(path, self._home), _SYMLINK_DEPTH)

    def _read(self, path: str, depth: int) -> bytes:
        try:
            stream, _ = self._api.get_archive(self._id, path)
            raw = b"".join(stream)
        except docker.errors.NotFound as exc:
            if self._container_exists():
                raise FileNotFoundError(2, "No such file in the guest", path) from exc
            raise ContainerUnavailable(f"container {self._name!r} is gone") from exc
        except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
            with _docker_errors(f"reading {path} from {self._name!r}"):
                raise exc
        with tarfile.open(fileobj=io.BytesIO(raw)) as tar:
            member = tar.next()
            if member is None:
                raise FileNotFoundError(2, "No such file in the guest", path)
            if member.isdir():
                raise IsADirectoryError(21, "Is a directory", path)
            if member.issym() and depth > 0:
                target = posixpath.join(posixpath.dirname(path), member.linkname)
                return self._read(posixpath.normpath(target), depth - 1)
            fh = tar.extractfile(member)
            if fh is None:
                raise OSError(f"{path} is not a regular file")
            return fh.read()

    def _container_exists(self) -> bool:
        try:
            self._api.inspect_container(self._id)
        except docker.errors.NotFound:
            return False
        except (docker.errors.DockerException, requests.exceptions.RequestException):
            return False
        return True

    def write_file(self, path: str, data: bytes) -> None:
        target = resolve_path(path, self._home)
        folder = posixpath.dirname(target)
        made = self._run(["mkdir", "-p", folder], _SHORT_S, self._user, "/")
        if made.returncode != 0:
            raise GuestError(f"cannot create {folder}: {made.stderr.decode(errors='replace')}")
        uid, gid = self._user_ids()
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            info = tarfile.TarInfo(posixpath.basename(target))
            info.size, info.mode, info.uid, info.gid = len(data), 0o644, uid, gid
            info.mtime = int(time.time())
            tar.addfile(info, io.BytesIO(data))
        with _docker_errors(f"writing {target} into {self._name!r}"):
            self._api.put_archive(self._id, folder, buf.getvalue())

    def describe(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "container": self._attrs.get("Name", "").lstrip("/") or self._name,
            "id": self._id[:12],
            "image": self._attrs.get("Config", {}).get("Image"),
            "user": self._user,
            "home": self._home,
        }

    def fresh(self) -> DockerGuest:
        """A new container from the same image, with no network, removed on close."""
        config = self._attrs.get("Config", {})
        with _docker_errors(f"creating a fresh container from {self._name!r}"):
            created = self._api.create_container(
                self._attrs["Image"],
                entrypoint=_KEEPALIVE,
                user=config.get("User") or "",
                labels={_FRESH_LABEL: "fresh"},
                host_config=self._api.create_host_config(network_mode="none"),
                network_disabled=True,
            )
            try:
                self._api.start(created["Id"])
            except BaseException:
                self._api.remove_container(created["Id"], force=True)
                raise
        try:
            guest = DockerGuest(created["Id"], user=self._user, home=self._explicit_home)
        except BaseException:
            with contextlib.suppress(docker.errors.DockerException):
                self._api.remove_container(created["Id"], force=True)
            raise
        guest._owned = True
        return guest

    def close(self) -> None:
        if self._owned:
            with contextlib.suppress(docker.errors.DockerException, requests.RequestException):
                self._api.remove_container(self._id, force=True)
            self._owned = False
