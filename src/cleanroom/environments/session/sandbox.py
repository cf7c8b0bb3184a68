"""Each environment's sandbox: its own IPC, PID, network, mount and UTS namespaces.

Everything an environment runs as its user (its programs, its session bus and what the
bus starts, the AT-SPI reader, a task's setup commands) runs inside its sandbox, so the
channels between environments do not exist rather than being watched for:

- **IPC**: System V shared memory, semaphores and message queues, POSIX message queues.
- **PID**: the sandbox sees only its own processes (``/proc`` is its own).
- **Network**: its own loopback; nothing it serves on 127.0.0.1 reaches another
  environment, the harness or the host, and the host's loopback (the pool's policy API,
  the verify server, other services) is out of reach. A page the harness opens is served
  through a forwarder for that one port (`PortForwarder`); abstract Unix sockets, which
  live in the network namespace, are private too.
- **Mounts**: the whole file system is read-only except the environment's own home and
  session runtime folder; ``/tmp``, ``/var/tmp``, ``/dev/shm`` and ``/run/lock`` are
  private and empty; ``/dev/pts`` is a new instance; other environments' homes and
  runtime folders are replaced by an empty folder; of ``/tmp/.X11-unix`` only the
  environment's own display socket is there.

The sandbox is made by util-linux ``unshare`` and entered with ``nsenter`` and
``setpriv`` (no new privileges are forbidden, so a task's ``sudo mkdir`` still works, and
as root it can write nowhere but the environment's own places). Every process entered
runs under a system call filter first (`syscall_filter`): no kernel keys, no mounts (a
root inside cannot remake its view writable), none of the calls that reach kernel
objects no namespace covers. Its first process
(`sandbox_init`) is pid 1 of the namespaces: ending it ends everything in the sandbox.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from cleanroom.environments.errors import StartError
from cleanroom.environments.session import syscall_filter
from cleanroom.environments.session.port_forward import ForwardedPorts
from cleanroom.environments.session.processes import alive, start_time
from cleanroom.lifecycle import stop_group

INIT_SOURCE = Path(__file__).with_name("sandbox_init.py")
# An empty host folder each sandbox covers with a tmpfs of its own while it moves mounts.
STAGE = Path("/run/cleanroom/sandbox-stage")
# World-writable folders every program expects: each is an empty tmpfs of the sandbox's.
PRIVATE_TMP = (Path("/tmp"), Path("/var/tmp"), Path("/dev/shm"), Path("/run/lock"))
X_SOCKET_DIR = Path("/tmp/.X11-unix")
NAMESPACES = ("ipc", "pid", "net", "mount", "uts")
_START_TIMEOUT_S = 15.0
_UNSHARE = [
    "unshare", "--mount", "--ipc", "--net", "--pid", "--uts", "--fork", "--mount-proc",
    "--propagation", "private",
]  # fmt: skip


@dataclass(frozen=True)
class SandboxLayout:
    """What one sandbox keeps of the host's files.

    ``writable`` are the environment's own folders (home, runtime folder), kept at their
    paths and writable; ``hidden`` are the folders that hold every environment's such
    folders (the pool's homes and runtime folders), replaced by an empty one first so
    that only the environment's own are there.
    """

    writable: tuple[Path, ...]
    hidden: tuple[Path, ...]
    display_number: int | None
    private_tmp: tuple[Path, ...] = PRIVATE_TMP
    stage: Path = STAGE


def mount_plan(layout: SandboxLayout) -> list[list[str]]:
    """The steps `sandbox_init` carries out, in order (pure; see its ``carry_out``).

    What must survive being covered (own folders, the display socket) is first bound
    into the stage; then everything is made read-only, the private and hidden folders are
    covered with fresh tmpfs mounts, and the staged mounts are put back in place.
    """
    covering = (*layout.hidden, *layout.private_tmp)
    if any(layout.stage == p or p in layout.stage.parents for p in covering):
        raise ValueError(f"the sandbox stage {layout.stage} lies in a folder the plan covers")
    stage = str(layout.stage)
    steps: list[list[str]] = [["tmpfs", stage, "0700"]]
    kept = [(str(p), f"{stage}/own{i}") for i, p in enumerate(layout.writable)]
    steps += [["bind", source, staged] for source, staged in kept]
    x_socket = None
    if layout.display_number is not None:
        x_socket = str(X_SOCKET_DIR / f"X{layout.display_number}")
        steps.append(["bind", x_socket, f"{stage}/x11"])
    steps += [["readonly", "/"], ["writable", "/proc"]]
    steps += [["tmpfs", str(p), "1777"] for p in layout.private_tmp]
    steps.append(["devpts"])
    steps += [["tmpfs", str(p), "0755"] for p in layout.hidden]
    for source, staged in kept:
        steps += [["bind", staged, source], ["writable", source]]
    if x_socket is not None:
        steps += [["mkdir", str(X_SOCKET_DIR), "1777"], ["bind", f"{stage}/x11", x_socket]]
    steps.append(["detach", stage])
    return steps


class Sandbox:
    """A running sandbox; `command` wraps an argv to run in it, `stop` ends it all."""

    def __init__(
        self, name: str, proc: subprocess.Popen[bytes], init_pid: int, filtered: bool = True
    ) -> None:
        self.name = name
        self.filtered = filtered
        self.proc = proc  # the unshare process, parent of the sandbox's pid 1
        self.init_pid = init_pid
        self.init_start = start_time(init_pid)
        self.forwarded = ForwardedPorts()

    @classmethod
    def start(
        cls, name: str, layout: SandboxLayout, log: Path, *, filtered: bool = True
    ) -> Sandbox:
        """Make the namespaces and lay out the mounts; return once the sandbox is ready."""
        missing = [p for p in layout.writable if not p.exists()]
        if missing:
            raise StartError(f"{name}: sandbox folders missing: {', '.join(map(str, missing))}")
        layout.stage.mkdir(parents=True, mode=0o700, exist_ok=True)
        layout.stage.chmod(0o700)
        present = tuple(p for p in layout.private_tmp if p.is_dir())
        plan = mount_plan(dataclasses.replace(layout, private_tmp=present))
        argv = [*_UNSHARE, "--", sys.executable, "-I", "-S", str(INIT_SOURCE), json.dumps(plan)]
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "ab") as err:
            try:
                proc = subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=err,
                    start_new_session=True,
                    cwd="/",
                )
            except OSError as exc:
                raise StartError(f"{name}: cannot start its sandbox: {exc}") from exc
        assert proc.stdout is not None
        answer = _read_line(proc.stdout, _START_TIMEOUT_S)
        proc.stdout.close()
        if answer != "ready":
            _end(proc)
            said = answer or f"exit code {proc.returncode}"
            raise StartError(f"{name}: its sandbox did not start ({said}; see {log})")
        init_pid = _only_child(proc.pid)
        if init_pid is None:
            _end(proc)
            raise StartError(f"{name}: its sandbox's first process is gone")
        return cls(name, proc, init_pid, filtered)

    def alive(self) -> bool:
        """Whether the sandbox's first process (and so the sandbox) still runs."""
        return alive(self.init_pid) and start_time(self.init_pid) == self.init_start

    def command(self, argv: list[str], uid: int, gid: int, cwd: str | Path) -> list[str]:
        """``argv`` to run inside the sandbox as ``uid``:``gid`` (no extra groups) in ``cwd``."""
        return entry_command(self.init_pid, argv, uid, gid, cwd, filtered=self.filtered)

    def forward_port(self, port: int) -> None:
        """Make the host's 127.0.0.1:``port`` reachable at the same address inside (once)."""
        self.forwarded.add(Path(f"/proc/{self.init_pid}/ns/net"), port)

    def describe(self) -> dict[str, Any]:
        """What `status` shows, and what a separate process needs to enter the sandbox."""
        return {
            "pid": self.init_pid,
            "start_time": self.init_start,
            "namespaces": list(NAMESPACES),
            "filtered": self.filtered,
            "forwarded_ports": self.forwarded.ports(),
        }

    def stop(self) -> None:
        """End the sandbox's first process: the kernel ends every process in it."""
        self.forwarded.close()
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.init_pid, signal.SIGKILL)
        # unshare returns once its child, the sandbox's pid 1, has ended, which happens
        # only after the kernel has ended every other process of the sandbox.
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)
        _end(self.proc)


def entry_command(
    init_pid: int,
    argv: list[str],
    uid: int,
    gid: int,
    cwd: str | Path,
    *,
    filtered: bool = True,
) -> list[str]:
    """The command that runs ``argv`` in the sandbox whose first process is ``init_pid``:
    entered as root, under the system call filter (unless a leaky setup removed it),
    then as ``uid``:``gid``."""
    as_user = ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--", *argv]
    return [
        "nsenter", f"--target={init_pid}", "--ipc", "--pid", "--net", "--mount", "--uts",
        f"--wd={cwd}", "--",
        *(syscall_filter.filtered(as_user) if filtered else as_user),
    ]  # fmt: skip


def enter_described(
    described: Mapping[str, Any], argv: list[str], uid: int, gid: int, cwd: str | Path
) -> list[str]:
    """`entry_command` for a sandbox another process started (from its `describe`),
    refusing a sandbox that has ended (its pid may belong to another process by now)."""
    pid = int(described["pid"])
    if not alive(pid) or start_time(pid) != described.get("start_time"):
        raise StartError(f"the sandbox (pid {pid}) has ended")
    return entry_command(pid, argv, uid, gid, cwd, filtered=bool(described.get("filtered", True)))


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
    return subprocess.Popen(sandbox.command(argv, uid, gid, cwd), cwd="/", **common)


def _read_line(stream: IO[bytes], timeout_s: float) -> str:
    deadline = time.monotonic() + timeout_s
    data = b""
    while b"\n" not in data:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        ready, _, _ = select.select([stream], [], [], left)
        if not ready:
            break
        chunk = os.read(stream.fileno(), 4096)
        if not chunk:
            break
        data += chunk
    return data.decode(errors="replace").strip().splitlines()[0] if data.strip() else ""


def _only_child(pid: int) -> int | None:
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return None
    return int(children[0]) if children else None


def _end(proc: subprocess.Popen[bytes]) -> None:
    stop_group(proc, 0.0)
