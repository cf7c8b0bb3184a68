"""Each environment's sandbox: a container ``runc`` makes and enters, with the spec in
`sandbox_spec` (what it shares of the host, what it may do, what it may take).

Everything an environment runs as its user (its programs, its session bus and what the
bus starts, the AT-SPI reader, a task's setup commands) runs inside its sandbox, so the
channels between environments do not exist rather than being watched for:

- **IPC, PID, network, mounts, UTS** are its own; nothing it serves on 127.0.0.1
  reaches another environment, the harness or the host, and the host's loopback is out
  of reach. A page the harness opens is served through a forwarder for that one port
  (`PortForwarder`).
- **Files**: the whole file system is read-only, and is the sandbox's own overlay of it,
  so no inode of it is shared with another sandbox; only the environment's own home and
  runtime folder are writable; ``/tmp`` and the other world-writable places are private,
  sized tmpfs mounts; other environments' folders are not there.
- **Kernel objects without a namespace** (keys, file system marks, mounts) are refused
  by a system call filter; **resources** are limited by a cgroup of the sandbox's own.

The runtime is ``runc``, the one Docker uses on the same machine: it makes the
namespaces, mounts, device nodes, cgroup and filter from the spec, runs `INIT` as the
sandbox's first process, and ``runc exec`` enters every later command with the same
filter, cgroup and namespaces. ``runc delete --force`` ends it all.

Every sandbox has a stage folder of its own under `STAGES` (its ``config.json``, the
``process.json`` of each command, the pid files), which no sandbox sees. Its root is an
overlay mounted on a small tmpfs of the stage only while ``runc`` starts: once the
sandbox runs, the mount is detached from the host, so no pool leaves mounts behind.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from cleanroom.environments.errors import StartError
from cleanroom.environments.session.cgroups import sandbox_cgroup
from cleanroom.environments.session.output_log import capped_output
from cleanroom.environments.session.port_forward import ForwardedPorts
from cleanroom.environments.session.processes import alive, start_time
from cleanroom.environments.session.sandbox_spec import (
    NAMESPACES,
    X_SOCKET_DIR,
    SandboxLayout,
    SandboxProtections,
    SandboxRuntime,
    process_config,
    runtime_config,
)

RUNTIME = SandboxRuntime.RUNC  # the default
# Where the runtime is looked for: the harness's own PATH, never a session's.
_SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# The stage folders of every sandbox, and the runtime's own state: no sandbox sees them.
STAGES = Path("/run/cleanroom/sandboxes")
RUNTIME_STATE = STAGES / "runtime"
GVISOR_STATE = STAGES / "runtime-gvisor"
# gVisor's flags: the ptrace platform (this machine has no hardware virtualisation for
# its KVM one); the sandbox's own network stack with only its loopback; a program inside
# may connect to and make Unix sockets in the host folders bound in (the display's X
# socket); the spec's system call filter is applied by that kernel to the sandbox's
# first process (runsc 2022 does not apply it to what ``runsc exec`` enters, so a program
# there may still trace the harness's programs beside it: check 12's harness_programs);
# the cgroup the spec names is made by runsc, with its limits, for the whole sandbox.
GVISOR_FLAGS = ("--platform=ptrace", "--network=none", "--host-uds=all", "--oci-seccomp")
_START_TIMEOUT_S = 20.0
_STOP_TIMEOUT_S = 20.0
_PID_FILE_WAIT_S = 5.0


class SandboxStage:
    """One sandbox's stage folder: what ``runc`` reads to make and enter it."""

    def __init__(self, container: str) -> None:
        self.container = container
        self.path = STAGES / container
        self.mnt = self.path / "mnt"  # a tmpfs while starting: the root and its empty layer
        self.root = self.mnt / "root"
        self.sockets = self.mnt / "x11"  # gVisor's: a folder holding the display's socket
        self.procs = self.path / "procs"
        self.pids = self.path / "pids"

    def make(self, own_inodes: bool) -> None:
        """Make the folder and mount the sandbox's root: an overlay of the host's root file
        system (its own inodes), or, in a leaky setup, a plain bind of it (the host's)."""
        STAGES.mkdir(parents=True, mode=0o700, exist_ok=True)
        STAGES.chmod(0o700)
        self.path.mkdir(mode=0o700)
        for folder in (self.procs, self.pids, self.mnt):
            folder.mkdir(mode=0o700)
        # The overlay's mount point must lie on another file system than its lower layer.
        _mount(["-t", "tmpfs", "-o", "mode=0700,size=1m", "tmpfs", str(self.mnt)])
        self.root.mkdir()
        if own_inodes:
            empty = self.mnt / "empty"
            empty.mkdir()
            # No upper layer: read-only. Two layers, since the kernel wants two without one.
            _mount(["-t", "overlay", "overlay", "-o", f"lowerdir=/:{empty}", str(self.root)])
        else:
            _mount(["--bind", "/", str(self.root)])

    def bind_socket(self, socket: Path) -> None:
        """Bind the display's ``socket`` alone into `sockets` (gVisor binds a folder in,
        not a socket); detached with the root, the sandbox keeps it."""
        self.sockets.mkdir()
        (self.sockets / socket.name).touch(mode=0o600)
        _mount(["--bind", str(socket), str(self.sockets / socket.name)])

    def detach_root(self) -> None:
        """Take the root's mounts off the host (the running sandbox keeps its own). The
        root's path stays, an empty folder: ``runc exec`` starts in it before it enters."""
        subprocess.run(["umount", "--recursive", "--lazy", str(self.mnt)], capture_output=True)
        with contextlib.suppress(OSError):
            self.root.mkdir(parents=True, exist_ok=True)

    def remove(self) -> None:
        self.detach_root()
        shutil.rmtree(self.path, ignore_errors=True)

    def process_file(self, spec: dict[str, Any]) -> Path:
        """The ``process.json`` of one command: written once per distinct command."""
        text = json.dumps(spec, sort_keys=True)
        path = self.procs / f"{hashlib.sha256(text.encode()).hexdigest()[:32]}.json"
        if not path.exists():
            fresh = path.with_suffix(f".{secrets.token_hex(4)}.tmp")
            fd = os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "w") as out:
                out.write(text)
            os.replace(fresh, path)
        return path

    def pid_file(self) -> Path:
        return self.pids / secrets.token_hex(8)


def _mount(args: list[str]) -> None:
    done = subprocess.run(["mount", *args], capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        raise StartError(f"cannot mount the sandbox's root: {done.stderr.strip()}")


def _runtime(*args: str, runtime: SandboxRuntime = RUNTIME) -> list[str]:
    found = shutil.which(runtime, path=_SYSTEM_PATH)
    if found is None:
        raise StartError(f"the container runtime {runtime} is not installed")
    if runtime == SandboxRuntime.RUNSC:
        return [found, "--root", str(GVISOR_STATE), *GVISOR_FLAGS, *args]
    return [found, "--root", str(RUNTIME_STATE), *args]


def runtime_environment() -> dict[str, str]:
    """The environment ``runc`` itself runs with (the command inside gets its own)."""
    return {"PATH": _SYSTEM_PATH}


class Sandbox:
    """A running sandbox; `command` wraps an argv to run in it, `stop` ends it all."""

    def __init__(
        self,
        name: str,
        stage: SandboxStage,
        init_pid: int,
        protections: SandboxProtections,
        namespaces: tuple[str, ...] = NAMESPACES,
        runtime: SandboxRuntime = RUNTIME,
    ) -> None:
        self.name = name
        self.runtime = runtime
        self.stage = stage
        self.protections = protections
        self.namespaces = namespaces
        self.init_pid = init_pid
        self.init_start = start_time(init_pid)
        self.forwarded = ForwardedPorts()

    @property
    def container(self) -> str:
        return self.stage.container

    @property
    def filtered(self) -> bool:
        return self.protections.syscall_filter

    @classmethod
    def start(
        cls,
        name: str,
        layout: SandboxLayout,
        log: Path | None,
        *,
        owner: str,
        protections: SandboxProtections | None = None,
        namespaces: tuple[str, ...] = NAMESPACES,
    ) -> Sandbox:
        """Make the sandbox and return once its first process runs. ``owner`` (the
        environment's account) begins the container's name, so that what a dead pool
        left is found by its name (`remove_sandboxes`). ``namespaces`` are the ones it
        gets of its own (a display's server keeps the host's PIDs: `DISPLAY_NAMESPACES`)."""
        protections = protections or SandboxProtections()
        runtime = protections.runtime
        missing = [p for p in (*layout.writable, *layout.readable) if not p.exists()]
        if missing:
            raise StartError(f"{name}: sandbox folders missing: {', '.join(map(str, missing))}")
        stage = SandboxStage(f"{owner}-{secrets.token_hex(4)}")
        present = tuple(p for p in layout.private_tmp if p.is_dir())
        layout = SandboxLayout(
            writable=layout.writable,
            hidden=(*layout.hidden, STAGES),
            display_number=layout.display_number,
            private_tmp=present,
            readable=layout.readable,
        )
        gvisor_display = runtime == SandboxRuntime.RUNSC and layout.display_number is not None
        config = runtime_config(
            root=stage.root,
            hostname=os.uname().nodename,
            layout=layout,
            protections=protections,
            cgroup=sandbox_cgroup(stage.container),
            namespaces=namespaces,
            socket_folder=stage.sockets if gvisor_display else None,
        )
        try:
            stage.make(protections.own_inodes)
            if gvisor_display and layout.display_number is not None:
                stage.bind_socket(X_SOCKET_DIR / f"X{layout.display_number}")
            (stage.path / "config.json").write_text(json.dumps(config))
            pid_file = stage.path / "init.pid"
            # The runtime's output and its first process's (which keeps the descriptor
            # for the sandbox's life): a pipe drained under a cap, never the host file.
            with capped_output(log) as err:
                done = subprocess.run(
                    _runtime("run", "--detach", "--pid-file", str(pid_file), "--bundle",
                             str(stage.path), stage.container, runtime=runtime),
                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                    timeout=_START_TIMEOUT_S, cwd="/",
                )  # fmt: skip
            if done.returncode != 0:
                raise StartError(
                    f"{name}: its sandbox did not start" + (f" (see {log})" if log else "")
                )
            init_pid = int(pid_file.read_text().strip())
        except (OSError, ValueError, subprocess.TimeoutExpired) as exc:
            _delete(stage.container, runtime)
            stage.remove()
            raise StartError(f"{name}: cannot start its sandbox: {exc}") from exc
        except StartError:
            _delete(stage.container, runtime)
            stage.remove()
            raise
        stage.detach_root()
        return cls(name, stage, init_pid, protections, namespaces, runtime)

    def alive(self) -> bool:
        """Whether the sandbox's first process (and so the sandbox) still runs."""
        return alive(self.init_pid) and start_time(self.init_pid) == self.init_start

    def command(self, entry: Entry) -> tuple[list[str], Path]:
        """The command that runs ``entry`` inside the sandbox, and the file its program's
        pid will be written to."""
        return _enter(self.stage, entry, self.runtime)

    def forward_port(self, port: int) -> None:
        """Make the host's 127.0.0.1:``port`` reachable at the same address inside (once)."""
        self.forwarded.add(Path(f"/proc/{self.init_pid}/ns/net"), port)

    def describe(self) -> dict[str, Any]:
        """What `status` shows, and what a separate process needs to enter the sandbox."""
        return {
            "pid": self.init_pid,
            "start_time": self.init_start,
            "container": self.container,
            "runtime": str(self.runtime),
            "namespaces": list(self.namespaces),
            "filtered": self.filtered,
            "protections": self.protections.describe(),
            "forwarded_ports": self.forwarded.ports(),
        }

    def stop(self) -> None:
        """End the sandbox: the runtime kills every process in it, then removes its
        cgroup; the stage folder goes with it."""
        self.forwarded.close()
        if not _delete(self.container, self.runtime) and self.alive():
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.init_pid, signal.SIGKILL)
        self.stage.remove()


def _delete(container: str, runtime: SandboxRuntime = RUNTIME) -> bool:
    try:
        done = subprocess.run(
            _runtime("delete", "--force", container, runtime=runtime),
            capture_output=True, timeout=_STOP_TIMEOUT_S, check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def remove_sandboxes(prefix: str) -> list[str]:
    """Delete every sandbox whose name begins with ``prefix`` (a dead pool's), with its
    stage folder; return their names."""
    removed = []
    for runtime, state in (
        (SandboxRuntime.RUNC, RUNTIME_STATE),
        (SandboxRuntime.RUNSC, GVISOR_STATE),
    ):
        if not state.is_dir():
            continue
        for entry in sorted(state.iterdir()):
            # runc keeps a folder per container; runsc files named ``<id>_sandbox:<id>...``
            name = entry.name.split("_sandbox:")[0]
            if name.startswith(prefix) and name not in removed:
                _delete(name, runtime)
                SandboxStage(name).remove()
                removed.append(name)
    if STAGES.is_dir():
        for entry in sorted(STAGES.iterdir()):
            if entry.name.startswith(prefix) and entry.name not in removed:
                SandboxStage(entry.name).remove()
                removed.append(entry.name)
    return removed


@dataclass(frozen=True)
class Entry:
    """A command to run inside a sandbox: as ``uid``:``gid`` (no extra groups), in
    ``cwd``, with exactly ``env``."""

    argv: list[str]
    uid: int
    gid: int
    cwd: str | Path
    env: Mapping[str, str]


def _enter(
    stage: SandboxStage, entry: Entry, runtime: SandboxRuntime = RUNTIME
) -> tuple[list[str], Path]:
    config = process_config(entry.argv, entry.uid, entry.gid, entry.cwd, dict(entry.env))
    process = stage.process_file(config)
    pid_file = stage.pid_file()
    command = _runtime(
        "exec", "--process", str(process), "--pid-file", str(pid_file), stage.container,
        runtime=runtime,
    )  # fmt: skip
    return command, pid_file


def enter_described(described: Mapping[str, Any], entry: Entry) -> tuple[list[str], Path]:
    """`Sandbox.command` for a sandbox another process started (from its `describe`),
    refusing a sandbox that has ended (its pid may belong to another process by now)."""
    pid = int(described["pid"])
    if not alive(pid) or start_time(pid) != described.get("start_time"):
        raise StartError(f"the sandbox (pid {pid}) has ended")
    runtime = SandboxRuntime(described.get("runtime", RUNTIME))
    return _enter(SandboxStage(str(described["container"])), entry, runtime)


class SandboxedProcess(subprocess.Popen[Any]):
    """``runc exec`` running one command in a sandbox. Its program leads a session of
    its own inside, so `group_leader` names it, for `lifecycle.stop_group` to end its
    whole group (a signal to ``runc exec`` alone would leave the program running)."""

    def __init__(self, argv: list[str], pid_file: Path, **kwargs: Any) -> None:
        super().__init__(argv, **kwargs)
        self._pid_file = pid_file
        self._leader: int | None = None

    def group_leader(self) -> int | None:
        """The program's host pid, once ``runc`` has written it (waiting a little while
        ``runc exec`` still runs and has not yet)."""
        if self._leader is not None:
            return self._leader
        deadline = time.monotonic() + _PID_FILE_WAIT_S
        while True:
            try:
                self._leader = int(self._pid_file.read_text().strip())
            except (OSError, ValueError):
                if self.poll() is not None or time.monotonic() > deadline:
                    return None
                time.sleep(0.005)
                continue
            self._pid_file.unlink(missing_ok=True)
            return self._leader


def spawn_as(
    argv: list[str],
    *,
    uid: int,
    gid: int,
    sandbox: Sandbox | None,
    cwd: str | Path,
    env: Mapping[str, str],
    stdin: int | IO[Any] | None = subprocess.DEVNULL,
    stdout: int | IO[Any] | None = subprocess.DEVNULL,
    stderr: int | IO[Any] | None = subprocess.DEVNULL,
    text: bool = False,
) -> subprocess.Popen[Any]:
    """Start ``argv`` as an environment's user, in its own process group, inside its
    sandbox (without one, a leaky setup's open host, only as the user)."""
    common: dict[str, Any] = {
        "env": dict(env),
        "stdin": stdin,
        "stdout": stdout,
        "stderr": stderr,
        "start_new_session": True,
        "text": text,
    }
    if text:
        common["bufsize"] = 1
    if sandbox is None:
        return subprocess.Popen(argv, cwd=str(cwd), user=uid, group=gid, extra_groups=[], **common)
    command, pid_file = sandbox.command(Entry(argv, uid, gid, cwd, env))
    return SandboxedProcess(command, pid_file, cwd="/", **{**common, "env": runtime_environment()})
