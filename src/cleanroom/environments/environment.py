"""One desktop environment: account, display, session, programs and the ways to act on them.

This is the effectful object the pool drives. It knows nothing of generations or
policies: the pool decides when to act, reset or recover; this object does it.
"""

from __future__ import annotations

import contextlib
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cleanroom.environments.accounts import Account
from cleanroom.environments.atspi import AtspiReader, AtspiUnavailable, FocusedText
from cleanroom.environments.clipboard import ClipboardOwner, ClipboardRead, read_selection
from cleanroom.environments.display import ScreenSize, XvfbDisplay
from cleanroom.environments.errors import BadAction, StartError
from cleanroom.environments.processes import kill_uid
from cleanroom.environments.programs import Program, launch, launch_url, wait_ready
from cleanroom.environments.screen import Screen, WindowInfo
from cleanroom.environments.session import Session
from cleanroom.environments.xinput import XInput


@dataclass(frozen=True)
class EnvSpec:
    """What an environment is made of."""

    name: str
    user: str
    home: Path
    runtime_dir: Path
    log_dir: Path
    programs: tuple[str, ...]
    screen: ScreenSize = field(default_factory=ScreenSize)


class DesktopEnvironment:
    """A running environment. Build with `start`; `stop` removes everything it made."""

    def __init__(self, spec: EnvSpec, account: Account, template: Path) -> None:
        self.spec = spec
        self.account = account
        self.template = template
        self.session: Session | None = None
        self.display: XvfbDisplay | None = None
        self.input: XInput | None = None
        self.clipboard: ClipboardOwner | None = None
        self.screen: Screen | None = None
        self.atspi: AtspiReader | None = None
        self.programs: list[Program] = []
        self.ready_at: float | None = None

    @property
    def name(self) -> str:
        return self.spec.name

    @classmethod
    def create(cls, spec: EnvSpec, template: Path) -> DesktopEnvironment:
        """Create the account and its home (from the template); nothing runs yet."""
        account = Account.create(spec.user, spec.home)
        env = cls(spec, account, template)
        try:
            account.restore_home(template)
        except BaseException:
            account.remove()
            raise
        return env

    # -- the display and session, which live until the environment is destroyed or crashes

    def start_desktop(self) -> None:
        """Start the display, the session bus and the harness's connections to them."""
        self.spec.log_dir.mkdir(parents=True, exist_ok=True)
        session = Session.prepare(self.account, self.spec.runtime_dir, "")
        session.screen_size = (self.spec.screen.width, self.spec.screen.height)
        self.session = session
        display = XvfbDisplay.start(
            session.xauthority, self.spec.screen, log=self.spec.log_dir / "xvfb.log"
        )
        self.display = display
        session.display = display.name
        session.start_bus()
        self.input = XInput(display.name)
        self.clipboard = ClipboardOwner(display.name)
        self.screen = Screen(display.name)
        self.atspi = AtspiReader(session.environ(), self.account.uid, self.account.gid)

    def stop_desktop(self) -> None:
        """End programs, every process of the account, the connections and the display."""
        self.stop_programs()
        for closer in (self.input, self.clipboard, self.screen, self.atspi):
            if closer is not None:
                with contextlib.suppress(Exception):
                    closer.close()
        self.input = self.clipboard = self.screen = self.atspi = None
        if self.session is not None:
            self.session.stop_bus()
        kill_uid(self.account.uid)  # the AT-SPI bus and anything the programs left behind
        if self.display is not None:
            self.display.stop()
            self.display = None
        if self.session is not None:
            self.session.remove()
            self.session = None

    # -- programs ------------------------------------------------------------------------

    def start_programs(self, timeout_s: float = 40.0) -> None:
        """Start the configured programs and wait until each shows its window."""
        if self.session is None or self.screen is None:
            raise StartError(f"{self.name}: the desktop is not running")
        self.programs = [
            launch(name, self.session, self.spec.log_dir) for name in self.spec.programs
        ]
        wait_ready(self.programs, self.screen, timeout_s)
        if "writer" in self.spec.programs:
            self._wait_document_accessible(timeout_s)
        self.ready_at = time.time()

    def _wait_document_accessible(self, timeout_s: float) -> None:
        # Writer maps its window before it takes keys; once its document paragraph is on
        # the accessibility bus, typed keys land in the document.
        assert self.atspi is not None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with contextlib.suppress(AtspiUnavailable):
                if any(i["role"] == "paragraph" for i in self.atspi.texts()):
                    return
            time.sleep(0.1)
        raise StartError(f"{self.name}: Writer's document never appeared on the AT-SPI bus")

    def stop_programs(self) -> None:
        """End every program (and, through the account, anything they started)."""
        for program in self.programs:
            program.stop()
        self.programs = []
        if self.input is not None:
            with contextlib.suppress(Exception):
                self.input.release_all()

    def restart_session(self) -> None:
        """End every process of the account (programs, session bus, AT-SPI bus, reader,
        anything a policy left running) and start a fresh session bus.

        The display stays: it belongs to the harness, not to the account.
        """
        self.stop_programs()
        if self.session is None:
            raise StartError(f"{self.name}: the desktop is not running")
        self.session.stop_bus()
        # No grace period: the home is thrown away next, so nothing needs a clean exit.
        kill_uid(self.account.uid, grace_s=0.0)
        self.session.start_bus()

    def restore_home(self) -> None:
        """Replace the home with a fresh copy of the template."""
        self.account.restore_home(self.template)

    def clear_clipboard(self) -> None:
        """Leave CLIPBOARD and PRIMARY without an owner."""
        if self.clipboard is not None:
            self.clipboard.clear()

    def open_url(self, url: str) -> None:
        """Ask the running browser for a new tab at ``url`` and wait until it shows."""
        if self.session is None:
            raise StartError(f"{self.name}: the desktop is not running")
        if not any(p.name == "browser" and p.alive() for p in self.programs):
            raise StartError(f"{self.name} runs no browser")
        if not url.startswith(("http://", "https://", "about:")):
            raise BadAction(f"only http(s) and about: URLs can be opened, got {url!r}")
        helper = launch_url("browser", self.session, self.spec.log_dir, url)
        with contextlib.suppress(subprocess.TimeoutExpired):
            helper.wait(timeout=15)  # the helper hands the URL to the running browser

    # -- health --------------------------------------------------------------------------

    def problems(self) -> list[str]:
        """What is wrong with the environment right now (empty when healthy)."""
        out = []
        if self.display is None or not self.display.alive():
            out.append("display is dead")
        if self.session is None or not self.session.bus_alive():
            out.append("session bus is dead")
        out.extend(f"{p.name} (pid {p.pid}) is dead" for p in self.programs if not p.alive())
        return out

    # -- observing -----------------------------------------------------------------------

    def screenshot_png(self) -> bytes:
        """The screen as PNG."""
        return self._screen().screenshot_png()

    def windows(self) -> list[WindowInfo]:
        """Top-level windows."""
        return self._screen().windows()

    def focused_text(self) -> FocusedText:
        """The focused text through AT-SPI."""
        if self.atspi is None:
            raise StartError(f"{self.name}: the desktop is not running")
        return self.atspi.focused()

    def read_clipboard(self, selection: str = "CLIPBOARD") -> ClipboardRead:
        """Read a selection as any client of this display would."""
        return read_selection(self._display().name, selection)

    def window_of(self, program: str) -> WindowInfo | None:
        """The current top-level window of a program kind, if it shows one."""
        for p in self.programs:
            if p.name == program:
                match = [w for w in self.windows() if p.kind.is_window(w)]
                return match[-1] if match else None
        return None

    def _screen(self) -> Screen:
        if self.screen is None:
            raise StartError(f"{self.name}: the desktop is not running")
        return self.screen

    def _display(self) -> XvfbDisplay:
        if self.display is None:
            raise StartError(f"{self.name}: the desktop is not running")
        return self.display

    def describe(self) -> dict[str, Any]:
        """What `status` shows: display, user, home, programs with pids, problems."""
        return {
            "name": self.name,
            "display": self.display.name if self.display else None,
            "display_pid": self.display.pid if self.display else None,
            "user": self.account.user,
            "uid": self.account.uid,
            "home": str(self.account.home),
            "runtime_dir": str(self.spec.runtime_dir),
            "xauthority": str(self.session.xauthority) if self.session else None,
            "dbus": self.session.bus_address if self.session else None,
            "programs": [{"name": p.name, "pid": p.pid, "alive": p.alive()} for p in self.programs],
            "problems": self.problems(),
        }

    def destroy(self) -> None:
        """Stop everything and remove the account and its home."""
        try:
            self.stop_desktop()
        finally:
            self.account.remove()
