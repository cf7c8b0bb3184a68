"""A login session for one environment: XDG_RUNTIME_DIR, D-Bus session bus, X cookie.

Each session has its own ``XDG_RUNTIME_DIR``, so the AT-SPI bus that D-Bus activates on
demand gets its own socket there; sessions sharing one runtime folder would share one
accessibility bus. A session can also join another's runtime folder and bus (a leaky
setup, see `leaky_setups`): it then owns neither and leaves both to the session it joined.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from cleanroom.environments import apps
from cleanroom.environments.errors import StartError
from cleanroom.environments.session.accounts import Account, own_tmpfs, remove_own_folder
from cleanroom.environments.session.sandbox import Sandbox, spawn_as
from cleanroom.environments.session.template import BROWSER_PROFILE, LIBREOFFICE_PROFILE
from cleanroom.lifecycle import stop_group, wait_until

_BUS_TIMEOUT_S = 10.0
_PATH = "/usr/local/bin:/usr/bin:/bin"


class Session:
    """The per-environment runtime folder and D-Bus session bus, run as the account."""

    def __init__(self, account: Account, runtime_dir: Path, display: str) -> None:
        self.account = account
        self.screen_size: tuple[int, int] = (1280, 800)
        self.runtime_dir = runtime_dir
        self.display = display
        self.xauthority = runtime_dir / "Xauthority"
        self.bus_path = runtime_dir / "bus"
        self.dbus: subprocess.Popen[bytes] | None = None
        self.host: Session | None = None  # the session whose runtime folder and bus we joined
        self.sandbox: Sandbox | None = None  # where everything of the session runs
        self.libreoffice_profile = account.home / LIBREOFFICE_PROFILE
        self.browser_profile = account.home / BROWSER_PROFILE

    @classmethod
    def prepare(
        cls, account: Account, runtime_dir: Path, display: str, size_mib: int | None = None
    ) -> Session:
        """Create the runtime folder (0700, the account's) before the display starts, so
        the display's cookie can be written into it; with ``size_mib``, a tmpfs of its own
        of that size (`accounts.own_tmpfs`), like the home."""
        if runtime_dir.exists():
            remove_own_folder(runtime_dir)
        runtime_dir.mkdir(parents=True, mode=0o700)
        if size_mib is not None:
            own_tmpfs(runtime_dir, size_mib, account.uid, account.gid)
        os.chown(runtime_dir, account.uid, account.gid)
        return cls(account, runtime_dir, display)

    @classmethod
    def join(cls, account: Account, host: Session, display: str) -> Session:
        """A session that uses ``host``'s runtime folder, X authority file and session bus
        (so one AT-SPI bus); the account must be ``host``'s, or the bus refuses it."""
        session = cls(account, host.runtime_dir, display)
        session.host = host
        return session

    @property
    def bus_address(self) -> str:
        return f"unix:path={self.bus_path}"

    def environ(self) -> dict[str, str]:
        """The environment every program of this session runs with."""
        return {
            "HOME": str(self.account.home),
            "USER": self.account.user,
            "LOGNAME": self.account.user,
            "SHELL": "/bin/bash",
            "PATH": _PATH,
            "LANG": "C.UTF-8",
            "DISPLAY": self.display,
            "XAUTHORITY": str(self.xauthority),
            "XDG_RUNTIME_DIR": str(self.runtime_dir),
            "DBUS_SESSION_BUS_ADDRESS": self.bus_address,
            # GTK programs (LibreOffice's gtk3 backend) publish their tree on the AT-SPI bus.
            "GTK_A11Y": "atspi",
            "NO_AT_BRIDGE": "0",
            "SAL_USE_VCLPLUGIN": "gtk3",
            **apps.ENVIRONMENT,
        }

    def start_bus(self) -> None:
        """Start the session's D-Bus daemon as the account and wait for its socket."""
        os.chown(self.xauthority, self.account.uid, self.account.gid)
        if self.host is not None:
            return  # the joined session's bus serves us
        self.dbus = self.spawn(
            [
                "dbus-daemon",
                "--session",
                f"--address={self.bus_address}",
                "--nofork",
                "--nopidfile",
            ],
            cwd="/",
        )
        dbus = self.dbus

        def bus_up() -> bool:
            if self.bus_path.exists():
                return True
            if dbus.poll() is not None:
                raise StartError(f"dbus-daemon for {self.account.user} exited early")
            return False

        if not wait_until(bus_up, _BUS_TIMEOUT_S, 0.01):
            raise StartError(f"dbus-daemon for {self.account.user} did not start")

    def spawn(
        self,
        argv: list[str],
        *,
        cwd: str | Path | None = None,
        env: dict[str, str] | None = None,
        stdin: Any = subprocess.DEVNULL,
        stdout: Any = subprocess.DEVNULL,
        stderr: Any = subprocess.DEVNULL,
        text: bool = False,
    ) -> subprocess.Popen[Any]:
        """Start ``argv`` as the account, in the session's sandbox, with its environment
        (``env`` replaces it), in its own process group; cwd defaults to the home."""
        return spawn_as(
            argv,
            uid=self.account.uid,
            gid=self.account.gid,
            sandbox=self.sandbox,
            cwd=cwd or self.account.home,
            env=env if env is not None else self.environ(),
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            text=text,
        )

    def bus_alive(self) -> bool:
        """Whether the D-Bus daemon still runs."""
        if self.host is not None:
            return self.host.bus_alive()
        return self.dbus is not None and self.dbus.poll() is None

    def stop_bus(self) -> None:
        """End the D-Bus daemon (the account's other processes are ended by the caller)."""
        if self.dbus is not None:
            stop_group(self.dbus, 3.0)

    def remove(self) -> None:
        """Delete the runtime folder (a joined session leaves it to its host)."""
        if self.host is not None:
            return
        remove_own_folder(self.runtime_dir)
