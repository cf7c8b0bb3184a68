"""Xvfb: one virtual X display per environment, admitting only clients with its cookie.

An X server reads files for its clients: a client may add any folder as a font path and
list the fonts named there. So each server runs in a sandbox of its own (`DisplayView`),
as an unprivileged user, and sees no environment's home or runtime folder, not even its
own environment's: of the host's writable places it has only the socket folder. It keeps
the host's process numbers (`DISPLAY_NAMESPACES`), so that it names each client by its
host pid as before; as a user of its own (`server_user`, one per display, made when it
starts and removed when it stops) it may not look into another user's processes, nor
another display's server's. Only a leaky setup starts one on the host as root, as it
used to run.

For a sandboxed server the harness reserves the display number by making the server's
lock file on the host (``/tmp/.X<n>-lock``, the file every X server checks) before the
server starts, since the server makes its own lock in its private ``/tmp``.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import random
import stat
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cleanroom.environments.errors import StartError
from cleanroom.environments.interface import CONTROL_FONT_NAME, CONTROL_FONTS, ScreenSize
from cleanroom.environments.session.output_log import capped_output
from cleanroom.environments.session.sandbox import (
    Entry,
    Sandbox,
    SandboxedProcess,
    runtime_environment,
)
from cleanroom.environments.session.sandbox_spec import (
    DISPLAY_NAMESPACES,
    SandboxLayout,
    SandboxProtections,
)
from cleanroom.environments.x11.xauth import grant_harness, new_cookie, write_cookie
from cleanroom.lifecycle import stop_group, wait_until

SOCKET_DIR = Path("/tmp/.X11-unix")
# A font folder every display's server can read (the harness's own, read-only): what a
# probe adds to its font path to prove that its server reads folders given by path.
# How many free numbers a start tries: a server that fails on one (its number taken by
# another's socket between the look and the start) starts on the next, one that fails on
# every number is broken (its socket folder, its binary) and fails the start at once.
_LAUNCH_TRIES = 5
# A sandboxed server's user is its environment's account's name and this.
SERVER_USER_SUFFIX = "d"
_FIRST, _LAST = 120, 900
_START_TIMEOUT_S = 10.0
_ANSWER_TIMEOUT_S = 2.0  # from the socket appearing to the server taking clients
# Displays of one process start one at a time: two threads that picked the same free
# number would each grant the harness their own cookie for it, and one display would
# then refuse the harness. Other processes are told apart by the lock file.
_STARTING = threading.Lock()
# In the sandbox: the cookie arrives on standard input, into a file of its private /tmp.
_SERVER_SCRIPT = (
    "umask 077; : > /tmp/server.auth; xauth -q -f /tmp/server.auth source - || exit 1; "
    'exec Xvfb "$@" -auth /tmp/server.auth'
)


@dataclass(frozen=True)
class DisplayView:
    """What a display's sandbox is made like: the folders it must not see (every
    environment's homes and runtime folders), the name its sandbox begins with (the
    environment's account, so a dead pool's is found by its name) and its protections."""

    owner: str
    hidden: tuple[Path, ...]
    protections: SandboxProtections = field(default_factory=SandboxProtections)


def lock_file(number: int) -> Path:
    return Path(f"/tmp/.X{number}-lock")


def _taken(number: int) -> bool:
    return lock_file(number).exists() or (SOCKET_DIR / f"X{number}").exists()


def _reserve(number: int) -> bool:
    """Make the display's lock file, as an X server does; False if it exists."""
    try:
        fd = os.open(lock_file(number), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o444)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w") as out:
        out.write(f"{os.getpid():10d}\n")  # the format X servers write and read
    return True


def ensure_socket_dir() -> None:
    """Make the folder every display's socket is in as X expects it: root's, sticky and
    writable by all (a sandboxed server, which is not root, makes its socket there).
    ``mkdir``'s mode is cut by the umask, so the mode is set after; a folder that is not
    root's own (or not a folder) is refused rather than used."""
    with contextlib.suppress(FileExistsError):
        SOCKET_DIR.mkdir()
    info = SOCKET_DIR.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != 0:
        raise StartError(f"{SOCKET_DIR} is not a folder of root's: refusing to start a display")
    if stat.S_IMODE(info.st_mode) != 0o1777:
        SOCKET_DIR.chmod(0o1777)


def ensure_control_fonts() -> Path:
    """The control font folder: one name, no font file (listing needs none)."""
    fonts_dir = CONTROL_FONTS / "fonts.dir"
    if not fonts_dir.is_file():
        CONTROL_FONTS.mkdir(parents=True, exist_ok=True)
        CONTROL_FONTS.parent.chmod(0o755)
        fresh = fonts_dir.with_suffix(f".{os.getpid()}.tmp")
        fresh.write_text(f"1\ncontrol.pcf {CONTROL_FONT_NAME}\n")
        fresh.chmod(0o644)
        os.replace(fresh, fonts_dir)
    return CONTROL_FONTS


class XvfbDisplay:
    """A running Xvfb server; `stop` ends it (and its sandbox)."""

    def __init__(
        self,
        number: int,
        proc: subprocess.Popen[bytes],
        cookie: str,
        size: ScreenSize,
        sandbox: Sandbox | None,
        server_user: str = "root",
    ) -> None:
        self.number = number
        self.proc = proc
        self.cookie = cookie
        self.size = size
        self.sandbox = sandbox
        self.server_user = server_user

    @property
    def name(self) -> str:
        """The DISPLAY value, such as ``:123``."""
        return f":{self.number}"

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def sandboxed(self) -> bool:
        return self.sandbox is not None

    @classmethod
    def start(
        cls,
        authority: Path,
        size: ScreenSize | None = None,
        *,
        log: Path | None = None,
        view: DisplayView | None = None,
    ) -> XvfbDisplay:
        """Start Xvfb on a free display number that admits the cookie written to
        ``authority``: in a sandbox made after ``view``, or (no view: a leaky setup's) on
        the host as root. The harness process is granted the same cookie. Returns once the
        display answers."""
        ensure_control_fonts()
        ensure_socket_dir()
        with _STARTING:
            return cls._start(authority, size or ScreenSize(), log, view)

    @classmethod
    def _start(
        cls, authority: Path, size: ScreenSize, log: Path | None, view: DisplayView | None
    ) -> XvfbDisplay:
        candidates = list(range(_FIRST, _LAST))
        random.shuffle(candidates)  # two pools starting at once rarely race for one number
        tried = 0
        for number in candidates:
            if tried == _LAUNCH_TRIES:
                break
            if _taken(number) or (view is not None and not _reserve(number)):
                continue
            tried += 1
            cookie = new_cookie()
            try:
                write_cookie(authority, number, cookie)
                grant_harness(number, cookie)
                display = cls._launch(number, cookie, size, log, view, authority)
            except BaseException:
                if view is not None:
                    lock_file(number).unlink(missing_ok=True)
                raise
            if display._wait_ready():
                return display
            display.stop()  # Xvfb failed on this number: try the next
        raise StartError(
            f"no X display could be started ({tried} numbers tried"
            + (f"; see {log})" if log else ")")
        )

    @classmethod
    def _launch(
        cls,
        number: int,
        cookie: str,
        size: ScreenSize,
        log: Path | None,
        view: DisplayView | None,
        authority: Path,
    ) -> XvfbDisplay:
        args = [
            f":{number}", "-screen", "0", size.xvfb_arg(), "-nolisten", "tcp",
            "-noreset", "+extension", "XTEST",
        ]  # fmt: skip
        # The server logs what its clients make it say: a pipe drained under a cap.
        with capped_output(log) as out:
            if view is None:
                proc: subprocess.Popen[bytes] = subprocess.Popen(
                    ["Xvfb", *args, "-auth", str(authority)],
                    stdout=out, stderr=out, stdin=subprocess.DEVNULL, start_new_session=True,
                )  # fmt: skip
                return cls(number, proc, cookie, size, None)
            return cls._launch_sandboxed(number, cookie, size, log, view, args, out)

    @classmethod
    def _launch_sandboxed(
        cls,
        number: int,
        cookie: str,
        size: ScreenSize,
        log: Path | None,
        view: DisplayView,
        args: list[str],
        out: int,
    ) -> XvfbDisplay:
        sandbox = Sandbox.start(
            f"display :{number}",
            SandboxLayout(
                writable=(SOCKET_DIR,),
                hidden=view.hidden,
                display_number=None,
                readable=(CONTROL_FONTS,),
            ),
            log,
            owner=f"{view.owner}-x{number}",
            protections=view.protections,
            namespaces=DISPLAY_NAMESPACES,
        )
        name = server_user(view.owner)
        try:
            user = _server_account(name)
            command, pid_file = sandbox.command(
                Entry(
                    ["/bin/sh", "-c", _SERVER_SCRIPT, "xvfb", *args],
                    user.pw_uid, user.pw_gid, "/", {"PATH": "/usr/bin:/bin", "HOME": "/tmp"},
                )
            )  # fmt: skip
            proc = SandboxedProcess(
                command, pid_file, cwd="/", env=runtime_environment(),
                stdin=subprocess.PIPE, stdout=out, stderr=out, start_new_session=True,
            )  # fmt: skip
            assert proc.stdin is not None
            with contextlib.suppress(BrokenPipeError):
                proc.stdin.write(f"add :{number} MIT-MAGIC-COOKIE-1 {cookie}\n".encode())
                proc.stdin.close()
        except BaseException:
            sandbox.stop()
            remove_server_user(name)
            raise
        return cls(number, proc, cookie, size, sandbox, name)

    def _wait_ready(self) -> bool:
        sock = SOCKET_DIR / f"X{self.number}"
        settled = wait_until(
            lambda: self.proc.poll() is not None or sock.exists(), _START_TIMEOUT_S, 0.01
        )
        return settled and self.proc.poll() is None and self._answers()

    def _answers(self) -> bool:
        from Xlib import display as xdisplay
        from Xlib.error import DisplayError

        def opens() -> bool:
            try:
                xdisplay.Display(self.name).close()
            except DisplayError:
                return False
            return True

        return wait_until(opens, _ANSWER_TIMEOUT_S, 0.02)

    def alive(self) -> bool:
        """Whether the Xvfb process is still running."""
        return self.proc.poll() is None

    def describe(self) -> dict[str, Any]:
        """What `status` shows of the display's server."""
        return {
            "number": self.number,
            "sandbox": self.sandbox.container if self.sandbox else None,
            "server_user": self.server_user,
        }

    def stop(self) -> None:
        """End the server and its sandbox, and take its socket and lock off the host."""
        stop_group(self.proc, 2.0 if self.sandbox else 5.0)
        if self.sandbox is not None:
            self.sandbox.stop()
            remove_display_files(self.number)  # its lock is the harness's
            remove_server_user(self.server_user)


def server_user(owner: str) -> str:
    """The Unix user the sandboxed server of ``owner``'s display runs as: one of its
    own, so that no two servers (which keep the host's process numbers) share a uid
    with each other or with anyone else."""
    return f"{owner}{SERVER_USER_SUFFIX}"


def _server_account(name: str) -> pwd.struct_passwd:
    """The server's user, made if it is not there yet (locked, no home, no shell), as
    the environments' own are made: the next free uid."""
    with contextlib.suppress(KeyError):
        return pwd.getpwnam(name)
    made = subprocess.run(
        ["useradd", "-M", "-U", "-d", "/nonexistent", "-s", "/usr/sbin/nologin", name],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if made.returncode != 0:
        raise StartError(f"cannot make the display server's user {name}: {made.stderr.strip()}")
    subprocess.run(["usermod", "--lock", name], capture_output=True, check=False)
    return pwd.getpwnam(name)


def remove_server_user(name: str) -> None:
    """Remove a display server's user (and its group) once its server has ended."""
    if name.endswith(SERVER_USER_SUFFIX):
        subprocess.run(["userdel", name], capture_output=True, check=False)


def remove_display_files(number: int) -> None:
    """Take a display's socket and lock off the host (a server killed hard leaves both,
    and a sandboxed server's lock is the harness's)."""
    (SOCKET_DIR / f"X{number}").unlink(missing_ok=True)
    lock_file(number).unlink(missing_ok=True)
