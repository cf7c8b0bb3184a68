"""The ``local`` guest: commands run as a Unix user of this machine, in that user's home.

This mirrors how OSWorld's in-VM server runs commands: as the desktop user, with the home
as working directory, so ``~`` and relative paths resolve the same way.
"""

from __future__ import annotations

import os
import pwd
import selectors
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

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
from cleanroom.host_files import read_beneath, read_regular
from cleanroom.lifecycle import stop_group

# How much of a command's standard output, and of its error, a guest keeps.
OUTPUT_CAP_BYTES = 64 << 20

# Debian's login.defs defaults: what PATH a fresh login shell gets.
_ROOT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_USER_PATH = "/usr/local/bin:/usr/bin:/bin:/usr/local/games:/usr/games"
# Host settings a login session would also have; nothing secret, nothing user-specific.
_PASS_THROUGH = ("LANG", "LC_ALL", "TZ", "DISPLAY")
# How long to wait for pipes to drain after the killed group is gone.
_REAP_GRACE_S = 5.0


class UserSwitchError(GuestError):
    """Running as another user needs root, or the user does not exist."""


def _lookup_user(name: str | None) -> pwd.struct_passwd:
    try:
        return pwd.getpwuid(os.geteuid()) if name is None else pwd.getpwnam(name)
    except KeyError as exc:
        raise UserSwitchError(f"no such user on this machine: {name!r}") from exc


def login_environment(account: pwd.struct_passwd, home: str) -> dict[str, str]:
    """The environment a login shell of ``account`` with ``home`` would start with."""
    env = {k: os.environ[k] for k in _PASS_THROUGH if k in os.environ}
    env.setdefault("LANG", "C.UTF-8")
    env.update(
        HOME=home,
        USER=account.pw_name,
        LOGNAME=account.pw_name,
        SHELL=account.pw_shell or "/bin/sh",
        PATH=_ROOT_PATH if account.pw_uid == 0 else _USER_PATH,
    )
    return env


def _chown_tree(root: str, uid: int, gid: int) -> None:
    os.chown(root, uid, gid, follow_symlinks=False)
    for top, dirs, files in os.walk(root):
        for name in dirs + files:
            os.chown(os.path.join(top, name), uid, gid, follow_symlinks=False)


class LocalGuest(Guest):
    """A local Unix account: subprocesses as that user, in a chosen home."""

    kind = "local"

    def __init__(
        self,
        *,
        user: str | None = None,
        home: str | None = None,
    ) -> None:
        self._account = _lookup_user(user)
        self._explicit_home = home is not None
        self._home = os.path.abspath(home if home is not None else self._account.pw_dir)
        self._owned_root: str | None = None  # a temporary folder this guest deletes on close
        self._spawned: list[subprocess.Popen[bytes]] = []
        self._check_can_switch(self._account)
        if not os.path.isdir(self._home):
            self._create_home(self._home)

    @property
    def home(self) -> str:
        return self._home

    @property
    def user(self) -> str:
        """The name of the account commands run as."""
        return self._account.pw_name

    def _check_can_switch(self, account: pwd.struct_passwd) -> None:
        if account.pw_uid != os.geteuid() and os.geteuid() != 0:
            raise UserSwitchError(
                f"running commands as {account.pw_name!r} needs root; "
                f"this process runs as uid {os.geteuid()}"
            )

    def _create_home(self, home: str) -> None:
        """A new home gets the desktop folders a fresh account has, owned by the user."""
        os.makedirs(home, mode=0o755)
        for name in DESKTOP_SKELETON:
            os.mkdir(os.path.join(home, name), 0o755)
        if os.geteuid() == 0:
            _chown_tree(home, self._account.pw_uid, self._account.pw_gid)

    def _popen_kwargs(self, user: str | None) -> tuple[dict[str, Any], pwd.struct_passwd]:
        account = self._account if user is None else _lookup_user(user)
        self._check_can_switch(account)
        home = self._home if account.pw_uid == self._account.pw_uid else account.pw_dir
        kwargs: dict[str, Any] = {
            "cwd": self._home,
            "env": login_environment(account, home),
            "start_new_session": True,
        }
        if account.pw_uid != os.geteuid():
            kwargs.update(
                user=account.pw_uid,
                group=account.pw_gid,
                extra_groups=os.getgrouplist(account.pw_name, account.pw_gid),
            )
        return kwargs, account

    def _popen(
        self, argv: list[str], kwargs: dict[str, Any], account: pwd.struct_passwd
    ) -> subprocess.Popen[bytes]:
        """Start ``argv`` (a subclass may start it elsewhere, adjusting ``kwargs``)."""
        return subprocess.Popen(argv, **kwargs)

    def _start(
        self, command: Command, shell: bool, user: str | None, **extra: Any
    ) -> subprocess.Popen[bytes]:
        if not os.path.isdir(self._home):
            raise GuestError(f"the guest home {self._home} no longer exists")
        kwargs, account = self._popen_kwargs(user)
        try:
            return self._popen(to_argv(command, shell=shell), {**kwargs, **extra}, account)
        except (FileNotFoundError, PermissionError, NotADirectoryError) as exc:
            raise CommandNotStarted(command, exc.strerror or str(exc)) from exc
        except ValueError as exc:  # shlex could not split, or an empty argv
            raise CommandNotStarted(command, str(exc)) from exc

    def exec(
        self, command: Command, *, shell: bool, timeout: float, user: str | None = None
    ) -> ExecResult:
        started = time.monotonic()
        proc = self._start(
            command,
            shell,
            user,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            out, err = _bounded_output(proc, started + timeout)
        except subprocess.TimeoutExpired:
            self._kill_group(proc)
            raise GuestTimeout(command, timeout) from None
        return ExecResult(
            exit_code=proc.returncode, stdout=out, stderr=err, seconds=time.monotonic() - started
        )

    def _kill_group(self, proc: subprocess.Popen[bytes]) -> None:
        # The command leads its own session, so the group holds every child it started.
        stop_group(proc, 0.0, reap_s=_REAP_GRACE_S)
        # A grandchild that left the group may hold our pipes: close them, do not drain.
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()

    def spawn(self, command: Command, *, shell: bool, user: str | None = None) -> None:
        proc = self._start(
            command,
            shell,
            user,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self._spawned.append(proc)

    def read_file(self, path: str) -> bytes:
        where = resolve_path(path, self._home)
        if Path(where).is_relative_to(self._home):
            # What the environment wrote: no link it left on the way is followed.
            return read_beneath(Path(self._home), Path(where))
        return read_regular(where)  # the host's own files, read-only to the environment

    def write_file(self, path: str, data: bytes) -> None:
        target = resolve_path(path, self._home)
        self._makedirs(os.path.dirname(target))
        with open(target, "wb") as fh:
            fh.write(data)
        if os.geteuid() == 0:
            os.chown(target, self._account.pw_uid, self._account.pw_gid)

    def _makedirs(self, folder: str) -> None:
        missing: list[str] = []
        while folder and not os.path.isdir(folder):
            missing.append(folder)
            folder = os.path.dirname(folder)
        for new in reversed(missing):
            os.mkdir(new, 0o755)
            if os.geteuid() == 0:
                os.chown(new, self._account.pw_uid, self._account.pw_gid)

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "user": self.user, "home": self._home}

    def fresh(self) -> LocalGuest:
        """A guest in a new temporary home, removed on close.

        The new home is a copy of this guest's home when that home was chosen explicitly
        (a prepared template); otherwise it holds only the desktop skeleton, because
        copying a real account's home would be slow and would leak its contents.
        """
        parent = tempfile.mkdtemp(prefix="cleanroom-guest-")
        os.chmod(parent, 0o755)
        home = os.path.join(parent, self.user)
        try:
            if self._explicit_home:
                shutil.copytree(self._home, home, symlinks=True)
                if os.geteuid() == 0:
                    _chown_tree(home, self._account.pw_uid, self._account.pw_gid)
            guest = LocalGuest(user=self.user, home=home)
        except BaseException:
            shutil.rmtree(parent, ignore_errors=True)
            raise
        guest._owned_root = parent
        return guest

    def close(self) -> None:
        for proc in self._spawned:
            stop_group(proc, 0.0)
        self._spawned.clear()
        if self._owned_root is not None:
            shutil.rmtree(self._owned_root, ignore_errors=True)
            self._owned_root = None


def _bounded_output(proc: subprocess.Popen[bytes], deadline: float) -> tuple[bytes, bytes]:
    """``proc``'s standard output and error until both close and it ends, keeping at most
    `OUTPUT_CAP_BYTES` of each (the rest is read and dropped, so the command never blocks
    on a full pipe): what a command prints in an environment is the agent's to make as
    large as it likes. Raises `subprocess.TimeoutExpired` at ``deadline``."""
    kept: dict[int, bytearray] = {}
    with selectors.DefaultSelector() as selector:
        for pipe in (proc.stdout, proc.stderr):
            assert pipe is not None
            os.set_blocking(pipe.fileno(), False)
            selector.register(pipe.fileno(), selectors.EVENT_READ)
            kept[pipe.fileno()] = bytearray()
        while selector.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                raise subprocess.TimeoutExpired(proc.args, 0)
            for key, _ in selector.select(min(left, 1.0)):
                fd = key.fd
                try:
                    chunk = os.read(fd, 1 << 16)
                except BlockingIOError:
                    continue
                if not chunk:
                    selector.unregister(fd)
                    continue
                room = OUTPUT_CAP_BYTES - len(kept[fd])
                if room > 0:
                    kept[fd] += chunk[:room]
    left = deadline - time.monotonic()
    try:
        proc.wait(timeout=max(left, 0.0))
    except subprocess.TimeoutExpired:
        raise subprocess.TimeoutExpired(proc.args, 0) from None
    assert proc.stdout is not None and proc.stderr is not None
    return bytes(kept[proc.stdout.fileno()]), bytes(kept[proc.stderr.fileno()])
