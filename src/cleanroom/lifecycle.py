"""Waiting, stopping and child services: the one way to do each.

- `wait_until`: poll a condition until it holds or a deadline passes.
- `stop_group`: end a child's process group (SIGTERM, a grace period, SIGKILL) and reap it.
- `ChildService`: a long-lived child process (the verify server, the pool's supervisor):
  spawned with its output in a log file, waited for until it says it is ready (a port or
  state file, a health check), described by its log's tail when it fails, stopped.
- `die_with_owner`: called first by a child service that must not outlive the process
  that started it (a run killed with SIGKILL must not leave its verify server behind).
- `owner_token` and `owner_gone`: a process named so that a later look can tell whether
  it still runs (a pid reused since is another process), for what it left labelled.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol, TypeVar, runtime_checkable

T = TypeVar("T")

OWNER_PID_OPTION = "--owner-pid"
_PR_SET_PDEATHSIG = 1
_OWNER_POLL_S = 1.0


def wait_until(
    check: Callable[[], T],
    timeout_s: float,
    poll_s: float = 0.05,
    *,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Call ``check`` every ``poll_s`` until it answers something other than None or
    False, or ``timeout_s`` passes, and return its last answer: a condition's True, or the
    value waited for (an empty text counts), came in time; None or False: it did not.
    ``check`` ends the wait early by raising (a process that exited, a failed start)."""
    deadline = clock() + timeout_s
    while clock() < deadline:
        answer = check()
        if answer is not None and answer is not False:
            return answer
        sleep(poll_s)
    return check()


def signal_group(pid: int, sig: int) -> bool:
    """Send ``sig`` to the process group ``pid`` leads, or to ``pid`` alone when it leads
    none (never to the caller's own group); False if the system refuses."""
    try:
        if os.getpgid(pid) == pid:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return True


class Child(Protocol):
    """What `stop_group` needs of a child process (a `subprocess.Popen` has it)."""

    @property
    def pid(self) -> int: ...

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...


@runtime_checkable
class LeadsGroupElsewhere(Protocol):
    """A child whose program leads a process group other than the child's own (a
    command ``runc exec`` runs in a sandbox leads a session of its own there)."""

    def group_leader(self) -> int | None: ...


def _signal_child(proc: Child, sig: int) -> None:
    if isinstance(proc, LeadsGroupElsewhere):
        leader = proc.group_leader()
        if leader is not None:
            signal_group(leader, sig)
    signal_group(proc.pid, sig)


def stop_group(proc: Child, grace_s: float = 5.0, reap_s: float = 10.0) -> None:
    """End ``proc`` and its process group: SIGTERM, up to ``grace_s`` for it to exit, then
    SIGKILL (at once when ``grace_s`` is 0), and up to ``reap_s`` to reap it."""
    if proc.poll() is None and grace_s > 0:
        _signal_child(proc, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=grace_s)
    if proc.poll() is None:
        _signal_child(proc, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=reap_s)


def log_tail(log: Path, lines: int = 15) -> str:
    """The last ``lines`` lines of a log file, to say why a child failed."""
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return f"(no log at {log.name})"


class ChildService:
    """A long-lived child process with its output in a log file.

    A detached service (the pool's supervisor) leads a session of its own and outlives
    the command that started it. An owned one (the verify server) is told the starter's
    pid with `OWNER_PID_OPTION` and calls `die_with_owner` first thing.
    """

    def __init__(self, proc: subprocess.Popen[bytes], log: Path, name: str) -> None:
        self.proc = proc
        self.log = log
        self.name = name

    @classmethod
    def spawn(cls, name: str, argv: list[str], log: Path, *, detached: bool) -> ChildService:
        """Start ``argv`` with its output appended to ``log``."""
        if not detached:
            argv = [*argv, OWNER_PID_OPTION, str(os.getpid())]
        with open(log, "ab") as out:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=detached,
                close_fds=True,
            )
        return cls(proc, log, name)

    @property
    def pid(self) -> int:
        """The child's pid."""
        return self.proc.pid

    def wait_ready(
        self,
        ready: Callable[[], T | None],
        timeout_s: float,
        error: Callable[[str], Exception],
        *,
        poll_s: float = 0.02,
        stop_grace_s: float = 5.0,
    ) -> T:
        """Poll ``ready`` until it answers; ``error(reason)`` (reason ends with the log's
        tail) if the child exits first or ``timeout_s`` passes. However the wait ends
        without an answer (a stop signal, Ctrl-C too), the child is stopped."""

        def answer() -> T | None:
            found = ready()
            if found is None and self.proc.poll() is not None:
                raise error(f"{self.name} exited with {self.proc.returncode}: {self.tail()}")
            return found

        try:
            found = wait_until(answer, timeout_s, poll_s)
            if found is None:
                raise error(f"{self.name} was not ready after {timeout_s:g} s: {self.tail()}")
            return found
        except BaseException:
            self.stop(stop_grace_s)
            raise

    def tail(self, lines: int = 15) -> str:
        """The end of the child's log."""
        return log_tail(self.log, lines)

    def alive(self) -> bool:
        """Whether the child still runs."""
        return self.proc.poll() is None

    def kill(self) -> None:
        """Kill the child outright (SIGKILL), as a crash would."""
        if self.alive():
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self, grace_s: float = 5.0) -> None:
        """Stop the child gracefully (SIGTERM), killing it if it does not exit in time."""
        stop_group(self.proc, grace_s)


def die_with_owner(owner_pid: int) -> None:
    """Make this process end (SIGTERM, so it stops cleanly) when ``owner_pid``, its
    parent, dies, even by SIGKILL: the kernel's parent-death signal, and a thread that
    watches for a new parent as a backstop. Ends the process at once if the owner is
    already gone."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)

    def orphaned() -> bool:
        return os.getppid() != owner_pid

    if orphaned():  # the owner died before the parent-death signal was set
        os.kill(os.getpid(), signal.SIGTERM)
        return

    def watch() -> None:
        wait_until(orphaned, math.inf, _OWNER_POLL_S)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="owner-watch", daemon=True).start()


def alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie counts as dead)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


def start_time(pid: int) -> int | None:
    """When a process started (clock ticks since boot), to tell it from a later process
    that reuses its pid; None if there is no such process."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None
    return int(fields[19])  # field 22 of stat; the split starts at field 3


_BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


def owner_token(pid: int | None = None) -> str:
    """This process (or ``pid``) as ``<boot id>:<pid>:<start time>``: what a label names
    its owner by."""
    pid = os.getpid() if pid is None else pid
    return f"{_boot_id()}:{pid}:{start_time(pid)}"


def owner_gone(token: str) -> bool | None:
    """Whether the process ``token`` names has ended: True, False, or None when it is not
    of this machine's boot (or no token at all), so nothing can be said of it here."""
    parts = token.split(":")
    if len(parts) != 3 or parts[0] != _boot_id() or not parts[1].isdigit():
        return None
    pid = int(parts[1])
    return not (alive(pid) and str(start_time(pid)) == parts[2])


def _boot_id() -> str:
    try:
        return _BOOT_ID.read_text().strip()
    except OSError:
        return "unknown-boot"
