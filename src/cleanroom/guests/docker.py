"""The ``docker:<container>`` guest: commands run through ``docker exec`` in a container.

Everything goes through the Docker layer, whose every failure is a `ContainerUnavailable`.
A command that outlives its limit is killed through the host pid the daemon reports (we
run on the daemon's host), falling back to a ``kill`` inside the container when the host
refuses.
"""

from __future__ import annotations

import contextlib
import io
import posixpath
import signal
import tarfile
import time
from collections.abc import Iterable
from typing import Any

from cleanroom.docker_layer import Docker, DockerError
from cleanroom.environments.interface import DESKTOP_SKELETON
from cleanroom.exec_result import ExecResult
from cleanroom.guests.base import (
    Command,
    CommandNotStarted,
    Guest,
    GuestError,
    GuestTimeout,
    resolve_path,
    to_argv,
)
from cleanroom.host_files import READ_CAP_BYTES, NotARegularFile
from cleanroom.lifecycle import signal_group

_CONTROL_TIMEOUT_S = 60
_KEEPALIVE = ["sleep", "infinity"]
_FRESH_LABEL = "cleanroom.guest"
_SYMLINK_DEPTH = 8
_SHORT_S = 30.0


class ContainerUnavailable(GuestError, DockerError):
    """The container is missing or stopped, or the Docker daemon cannot be reached."""


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
        self._docker = Docker.connect(_CONTROL_TIMEOUT_S, error=ContainerUnavailable)
        self._owned = False
        try:
            self._attrs: dict[str, Any] = self._docker.inspect_container(container)
        except BaseException:
            self._docker.close()
            raise
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
        if probe.exit_code == 0:
            return
        folders = [self._home] + [posixpath.join(self._home, d) for d in DESKTOP_SKELETON]
        made = self._run(["mkdir", "-p", *folders], _SHORT_S, "0", "/")
        if made.exit_code != 0:
            raise GuestError(f"could not create home {self._home}: {made.stderr.decode()}")
        uid, gid = self._user_ids()
        owned = self._run(["chown", f"{uid}:{gid}", *folders], _SHORT_S, "0", "/")
        if owned.exit_code != 0:
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
        result = self._docker.exec(
            self._id,
            argv,
            user=user,
            env=env,
            workdir=workdir if workdir is not None else self._home,
            timeout=timeout,
            cap=None,
            wait_for_children=True,
        )
        if result.timed_out:
            self._kill_exec(result.exec_id)
            raise GuestTimeout(argv, timeout)
        if result.stdout.startswith(b"OCI runtime exec failed") and not self._docker.exec_inspect(
            result.exec_id
        ).get("Pid"):
            raise CommandNotStarted(argv, result.stdout.decode(errors="replace").strip())
        if result.exit_code is None:
            raise ContainerUnavailable(f"the daemon never said how {argv[0]} in {self._name} ended")
        return result

    def _kill_exec(self, exec_id: str) -> None:
        pid = 0
        for _ in range(20):  # the process may not have been given a pid yet
            pid = int(self._docker.exec_inspect(exec_id).get("Pid") or 0)
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
        self._docker.spawn(self._id, argv, user=who, workdir=self._home)

    def read_file(self, path: str) -> bytes:
        return self._read(resolve_path(path, self._home), _SYMLINK_DEPTH)

    def _read(self, path: str, depth: int) -> bytes:
        try:
            stream, _ = self._docker.get_archive(self._id, path)
            raw = _capped(stream, path)
        except ContainerUnavailable as exc:
            if exc.status != 404:
                raise
            if self._container_exists():
                raise FileNotFoundError(2, "No such file in the guest", path) from exc
            raise ContainerUnavailable(f"container {self._name!r} is gone") from exc
        with tarfile.open(fileobj=io.BytesIO(raw)) as tar:
            member = tar.next()
            if member is None:
                raise FileNotFoundError(2, "No such file in the guest", path)
            if member.issym() and depth > 0:
                target = posixpath.join(posixpath.dirname(path), member.linkname)
                return self._read(posixpath.normpath(target), depth - 1)
            fh = tar.extractfile(member) if member.isreg() else None
            if fh is None:
                raise NotARegularFile(path, _kind(member))
            return fh.read()

    def _container_exists(self) -> bool:
        try:
            self._docker.inspect_container(self._id)
        except ContainerUnavailable:
            return False
        return True

    def write_file(self, path: str, data: bytes) -> None:
        target = resolve_path(path, self._home)
        folder = posixpath.dirname(target)
        made = self._run(["mkdir", "-p", folder], _SHORT_S, self._user, "/")
        if made.exit_code != 0:
            raise GuestError(f"cannot create {folder}: {made.stderr.decode(errors='replace')}")
        uid, gid = self._user_ids()
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            info = tarfile.TarInfo(posixpath.basename(target))
            info.size, info.mode, info.uid, info.gid = len(data), 0o644, uid, gid
            info.mtime = int(time.time())
            tar.addfile(info, io.BytesIO(data))
        self._docker.put_archive(self._id, folder, buf.getvalue())

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
        created = self._docker.run_container(
            self._attrs["Image"],
            None,
            entrypoint=_KEEPALIVE,
            user=config.get("User") or "",
            labels={_FRESH_LABEL: "fresh"},
            network_mode="none",
            network_disabled=True,
        )
        try:
            guest = DockerGuest(created, user=self._user, home=self._explicit_home)
        except BaseException:
            with contextlib.suppress(ContainerUnavailable):
                self._docker.remove_container(created)
            raise
        guest._owned = True
        return guest

    def close(self) -> None:
        if self._owned:
            with contextlib.suppress(ContainerUnavailable):
                self._docker.remove_container(self._id)
            self._owned = False
        self._docker.close()


def _capped(stream: Iterable[bytes], path: str) -> bytes:
    """The archive's bytes; `NotARegularFile` once they pass the read cap (and a header)."""
    chunks: list[bytes] = []
    size = 0
    for chunk in stream:
        size += len(chunk)
        if size > READ_CAP_BYTES + 1024:
            raise NotARegularFile(path, f"a file over {READ_CAP_BYTES >> 20} MiB")
        chunks.append(chunk)
    return b"".join(chunks)


def _kind(member: tarfile.TarInfo) -> str:
    if member.isdir():
        return "a directory"
    if member.isfifo():
        return "a fifo"
    if member.issym() or member.islnk():
        return "a chain of links too long to follow"
    return "a device"
