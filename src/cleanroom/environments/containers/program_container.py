"""One environment's programs in a Docker container of their own (the pool's containers mode).

The container has no network (only its own ``lo``; a page the harness serves on the
host's loopback is reached through a forwarder for that one port, made in the
container's network namespace) and sees, of the host, only what its
environment owns: its display's socket file, its home, and its session runtime folder
(which holds its X cookie, its D-Bus socket and the AT-SPI bus socket that D-Bus starts
there, so the host's AT-SPI reader still sees what the programs show). Everything in it
runs as the environment's user with no capabilities, under Docker's default seccomp
profile less what a sandbox's filter refuses (`seccomp_profile`), with the kernel's
machine-wide ``/proc/locks`` and ``fs.aio-nr`` masked. Its root is read-only: what its
programs may write is its home, its runtime folder and sized tmpfs mounts (``/tmp``,
``/var/tmp``, ``/run``, ``/run/lock``, ``/dev/shm``). Its ``/dev/pts`` is a pty pool of
its own with the sandboxes' bound (a ``devpts`` instance the harness mounts for it
beside its runtime folder: Docker mounts one without a bound and has no option for
one). An X client finds a display through
its socket file or an abstract socket; the abstract ones live in the network namespace,
which the container does not share, so with one socket file mounted the container can
reach one display.

The container lives as long as the programs: stopping the programs removes it, and
starting them again creates a fresh one, so a reset or a recovery never reuses a
container (nor its ``/tmp``).
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import socket
import subprocess
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cleanroom.docker_layer import Docker
from cleanroom.environments.containers.desktop_image import DockerUnavailable, docker_client
from cleanroom.environments.containers.seccomp_profile import MASKED_PATHS, security_option
from cleanroom.environments.errors import BadAction, StartError
from cleanroom.environments.interface import SandboxLimits
from cleanroom.environments.session.cgroups import ENVIRONMENTS
from cleanroom.environments.session.login import Session
from cleanroom.environments.session.output_log import CAPTURED_OUTPUT_MAX_BYTES, copy_capped
from cleanroom.environments.session.port_forward import ForwardedPorts, loopback_port
from cleanroom.environments.session.processes import alive, kill_pids, process_tree, start_time
from cleanroom.environments.session.programs import PROGRAM_KINDS, Program, ProgramKind
from cleanroom.lifecycle import wait_until

POOL_LABEL = "cleanroom.pool"
ENV_LABEL = "cleanroom.env"
OWNER_LABEL = "cleanroom.owner"  # "<pid>:<start time>" of the process that owns the pool
X_SOCKET_DIR = Path("/tmp/.X11-unix")
_SHM_SIZE = "256m"  # Chromium keeps its shared memory in /dev/shm; Docker's default is 64m
_PID_TIMEOUT_S = 10.0
_REMOVE_TIMEOUT_S = 30
# Where a container's programs may write besides its home and runtime folder (the root
# is read-only): each an empty tmpfs of the sandbox's size. ``/dev/shm`` is Docker's own.
PRIVATE_TMP = ("/tmp", "/var/tmp", "/run", "/run/lock")


class NoNetworkInContainer(BadAction):
    """A contained program was asked to reach the network, which its container lacks."""


@dataclass(frozen=True)
class ContainerPlan:
    """Which image an environment's container runs and how it is named and labelled."""

    image: str
    name: str
    labels: dict[str, str]


class ExecProcess:
    """A process started with ``docker exec``, followed from the host by its pid.

    Its output is copied into the environment's log file by a thread, as a host
    program's output is.
    """

    def __init__(self, docker: Docker, exec_id: str, argv: list[str], pid: int) -> None:
        self.args = argv
        self._docker = docker
        self._exec_id = exec_id
        self._pid = pid
        self._start = start_time(pid)
        self._returncode: int | None = None

    @property
    def pid(self) -> int:
        """The process's pid on the host."""
        return self._pid

    @property
    def returncode(self) -> int | None:
        """Its exit code once it has ended (None while it runs)."""
        return self.poll()

    def poll(self) -> int | None:
        """None while the process runs; its exit code (or -9 if unknown) once it ended."""
        if self._returncode is not None:
            return self._returncode
        if alive(self._pid) and start_time(self._pid) == self._start:
            return None
        code: int | None = None
        with contextlib.suppress(DockerUnavailable):  # the container may already be gone
            code = self._docker.exec_inspect(self._exec_id).get("ExitCode")
        self._returncode = -signal.SIGKILL if code is None else int(code)
        return self._returncode

    def wait(self, timeout: float | None = None) -> int:
        """Wait until the process has ended; `subprocess.TimeoutExpired` after ``timeout``."""
        wait_until(lambda: self.poll() is not None, math.inf if timeout is None else timeout)
        code = self.poll()
        if code is None:
            raise subprocess.TimeoutExpired(f"exec {self._exec_id[:12]}", timeout or 0)
        return code


class ContainedProgram(Program):
    """A program running in its environment's container."""

    def stop(self) -> None:
        """End the program and everything it started (a launcher script's children too)."""
        if self.proc.poll() is None:
            kill_pids(process_tree(self.pid), grace_s=0.0)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)


class ProgramContainer:
    """A running container for one environment; `remove` ends it and all it runs."""

    def __init__(
        self,
        docker: Docker,
        container_id: str,
        name: str,
        session: Session,
        log_dir: Path,
        ptys: Path | None = None,
    ) -> None:
        self.ptys = ptys  # the mount point of its own pty pool on the host
        self.docker = docker
        self.id = container_id
        self.name = name
        self.session = session
        self.log_dir = log_dir
        self.forwarded = ForwardedPorts()

    def forward_port(self, port: int) -> None:
        """Make the host's 127.0.0.1:``port`` reachable at the same address in the
        container's own network namespace (once), and nothing else of the host."""
        if port in self.forwarded:
            return
        pid = int(self.docker.inspect_container(self.id).get("State", {}).get("Pid") or 0)
        if pid <= 0:
            raise StartError(f"{self.name} is not running")
        self.forwarded.add(Path(f"/proc/{pid}/ns/net"), port)

    @classmethod
    def start(
        cls,
        plan: ContainerPlan,
        session: Session,
        display_number: int,
        log_dir: Path,
        limits: SandboxLimits | None = None,
    ) -> ProgramContainer:
        """Create and start the container for ``session`` on display ``display_number``,
        held to ``limits`` as a sandbox is (its cgroup, sized /tmp and /dev/shm)."""
        account = session.account
        x_socket = X_SOCKET_DIR / f"X{display_number}"
        if not x_socket.exists():
            raise StartError(f"display :{display_number} has no socket at {x_socket}")
        log_dir.mkdir(parents=True, exist_ok=True)
        identity = _write_identity(session)
        ptys = _own_pty_pool(session, limits)
        volumes = {
            str(ptys): {"bind": "/dev/pts", "mode": "rw"},
            str(x_socket): {"bind": str(x_socket), "mode": "ro"},
            str(account.home): {"bind": str(account.home), "mode": "rw"},
            str(session.runtime_dir): {"bind": str(session.runtime_dir), "mode": "rw"},
            str(identity / "passwd"): {"bind": "/etc/passwd", "mode": "ro"},
            str(identity / "group"): {"bind": "/etc/group", "mode": "ro"},
        }
        docker = docker_client()
        docker.remove_container(plan.name)  # left by a crashed start of the same environment
        try:
            container_id = docker.run_container(
                plan.image,
                ["sleep", "infinity"],
                name=plan.name,
                labels=plan.labels,
                init=True,  # reaps what the programs orphan
                # Its first process's output is the daemon's log file on the host, and any
                # program inside may write there (as ``/proc/1/fd/1``): no log at all.
                log_config={"type": "none", "config": {}},
                user=f"{account.uid}:{account.gid}",
                network_mode="none",
                # The display's cookie is filed under the host's name (X's "local" entries
                # are matched by hostname), so the container answers to that name.
                hostname=socket.gethostname(),
                cap_drop=["ALL"],
                security_opt=["no-new-privileges", security_option()],
                masked_paths=list(MASKED_PATHS),
                read_only=True,
                tmpfs=_private_tmp(limits),
                shm_size=f"{limits.tmpfs_mib}m" if limits else _SHM_SIZE,
                **_limits_options(limits),
                environment=session.environ(),
                working_dir=str(account.home),
                volumes=volumes,
            )
        except DockerUnavailable as exc:
            docker.close()
            _release_pty_pool(ptys)
            if exc.status == 404:
                raise StartError(f"the desktop image {plan.image} is missing: {exc}") from exc
            raise DockerUnavailable(f"starting container {plan.name}: {exc}") from exc
        return cls(docker, container_id, plan.name, session, log_dir, ptys)

    def launch(self, name: str) -> ContainedProgram:
        """Start one program of the environment in the container; does not wait for it."""
        kind = PROGRAM_KINDS[name]
        return ContainedProgram(kind, self.exec(name, kind.argv(self.session)))

    def launch_url(self, name: str, url: str) -> ExecProcess:
        """Run the program again with a URL inside the container (a running instance there
        takes it over and the helper exits). Only URLs that need no network can be opened:
        ``about:`` pages, and the host's loopback pages once their port is forwarded."""
        if not (url.startswith("about:") or loopback_port(url) in self.forwarded):
            raise NoNetworkInContainer(
                f"{self.name} has no network, so its browser cannot load {url}; "
                "only the harness's own pages on 127.0.0.1 are forwarded into it"
            )
        kind: ProgramKind = PROGRAM_KINDS[name]
        argv = [a for a in kind.argv(self.session) if a != "about:blank"]
        return self.exec(name, [*argv, url])

    def exec(self, log_name: str, argv: list[str]) -> ExecProcess:
        """Start ``argv`` in the container as the environment's user; output to the log."""
        account = self.session.account
        try:
            exec_id, output = self.docker.stream(
                self.id,
                argv,
                user=f"{account.uid}:{account.gid}",
                env=self.session.environ(),
                workdir=str(account.home),
            )
        except DockerUnavailable as exc:
            raise StartError(f"cannot start {log_name} in {self.name}: {exc}") from exc
        copier = threading.Thread(
            target=_copy_output,
            args=(output, self.log_dir / f"{log_name}.log"),
            name=f"{self.name}-{log_name}-log",
            daemon=True,
        )
        copier.start()
        pid = _exec_pid(self.docker, exec_id, log_name)
        return ExecProcess(self.docker, exec_id, argv, pid)

    def run(self, argv: list[str], timeout_s: float = 30.0) -> tuple[int, str]:
        """Run a command in the container as the environment's user and wait for it;
        return its exit code and output (stdout and stderr together, the first
        `CAPTURED_OUTPUT_MAX_BYTES`).
        `subprocess.TimeoutExpired` after ``timeout_s``, the command and its children
        killed."""
        account = self.session.account
        result = self.docker.exec(
            self.id,
            argv,
            user=f"{account.uid}:{account.gid}",
            env=self.session.environ(),
            workdir=str(account.home),
            timeout=timeout_s,
            cap=CAPTURED_OUTPUT_MAX_BYTES,
            wait_for_children=True,
        )
        if result.timed_out:
            pid = int(self.docker.exec_inspect(result.exec_id).get("Pid") or 0)
            if pid:
                kill_pids(process_tree(pid), grace_s=0.0)
            raise subprocess.TimeoutExpired(argv, timeout_s)
        if result.exit_code is None:
            raise DockerUnavailable(f"the daemon never said how {argv[0]} in {self.name} ended")
        return result.exit_code, result.output.decode(errors="replace")

    def _state(self) -> dict[str, Any] | None:
        try:
            return dict(self.docker.inspect_container(self.id).get("State") or {})
        except DockerUnavailable:
            return None

    def running(self) -> bool:
        """Whether the container still runs (True when the daemon cannot say: a daemon
        that does not answer is not the container's death)."""
        state = self._state()
        return state is None or bool(state.get("Running"))

    def oom_killed(self) -> bool:
        """Whether the runtime says the kernel ended the container for its own memory."""
        state = self._state()
        return state is not None and bool(state.get("OOMKilled"))

    def remove(self) -> None:
        """Kill the container and everything in it, and delete it."""
        self.forwarded.close()
        try:
            self.docker.remove_container(self.id)
        finally:
            self.docker.close()
            if self.ptys is not None:
                _release_pty_pool(self.ptys)


def _limits_options(limits: SandboxLimits | None) -> dict[str, Any]:
    """Docker's options for the limits a sandbox has (`sandbox_spec.resources`), in the
    environments' cgroup (`cgroups.ENVIRONMENTS`)."""
    if limits is None:
        return {}
    memory = limits.memory_mib * 1024 * 1024
    return {
        "mem_limit": memory,
        "memswap_limit": memory,
        "pids_limit": limits.pids,
        "cpu_shares": limits.cpu_shares,
        "cgroup_parent": ENVIRONMENTS,  # beside the sandboxes, apart from the harness
    }


def _private_tmp(limits: SandboxLimits | None) -> dict[str, str]:
    """The container's tmpfs mounts, each of the sandbox's size (unsized without limits)."""
    size = f"size={limits.tmpfs_mib}m," if limits else ""
    return {place: f"{size}mode=1777,nosuid,nodev" for place in PRIVATE_TMP}


def _own_pty_pool(session: Session, limits: SandboxLimits | None) -> Path:
    """Mount a new ``devpts`` instance for the container beside the session's runtime
    folder (where the pool's end unmounts whatever is left below its root), bounded
    as a sandbox's is (`SandboxLimits.ptys`); one left by a crashed start goes first."""
    point = session.runtime_dir.parent / f"{session.runtime_dir.name}.pts"
    _release_pty_pool(point)
    point.mkdir(mode=0o755, exist_ok=True)
    options = "newinstance,ptmxmode=0666,mode=0620,gid=5,nosuid,noexec"
    if limits is not None:
        options += f",max={limits.ptys}"
    done = subprocess.run(
        ["mount", "-t", "devpts", "-o", options, "devpts", str(point)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise StartError(f"cannot give the container a pty pool: {done.stderr.strip()}")
    return point


def _release_pty_pool(point: Path) -> None:
    if os.path.ismount(point):
        subprocess.run(["umount", "--lazy", str(point)], capture_output=True, check=False)
    with contextlib.suppress(OSError):
        point.rmdir()


def _exec_pid(docker: Docker, exec_id: str, what: str) -> int:
    def started() -> int | None:
        info = docker.exec_inspect(exec_id)
        if info.get("Pid"):
            return int(info["Pid"])
        if not info.get("Running") and info.get("ExitCode") is not None:
            raise StartError(f"{what} exited at once with {info['ExitCode']}")
        return None

    pid = wait_until(started, _PID_TIMEOUT_S, 0.02)
    if pid is None:
        raise StartError(f"{what} did not start in its container within {_PID_TIMEOUT_S:g} s")
    return pid


def _copy_output(chunks: Iterable[bytes], log: Path) -> None:
    with contextlib.suppress(Exception):  # ends with the process
        copy_capped(chunks, log)


def _write_identity(session: Session) -> Path:
    """Files naming the environment's user inside the container (its passwd and group),
    kept next to the session's runtime folder, which the container does not see."""
    account = session.account
    folder = session.runtime_dir.parent / f"{session.runtime_dir.name}.identity"
    folder.mkdir(mode=0o755, exist_ok=True)
    (folder / "passwd").write_text(
        "root:x:0:0:root:/root:/bin/bash\n"
        f"{account.user}:x:{account.uid}:{account.gid}::{account.home}:/bin/bash\n"
    )
    (folder / "group").write_text(f"root:x:0:\n{account.user}:x:{account.gid}:\n")
    return folder


def owner_label() -> str:
    """The value of `OWNER_LABEL` for this process."""
    pid = os.getpid()
    return f"{pid}:{start_time(pid)}"


def plan_for(pool_id: str, env: str, image: str, slot: str = "") -> ContainerPlan:
    """The container plan of one environment of a pool (of its standby slot ``slot``),
    labelled so that a pool whose owner died can find (and remove) its containers."""
    return ContainerPlan(
        image=image,
        name=f"cleanroom-{pool_id}-{env}" + (f".{slot}" if slot else ""),
        labels={POOL_LABEL: pool_id, ENV_LABEL: env, OWNER_LABEL: owner_label()},
    )
