"""One session shared on purpose: two sides, each a Writer with its own profile and
document, on one display, one D-Bus session and one clipboard, as one temporary user.

This is the positive control's setup (`isolation.controls.positive`): interference that
no pool environment may ever see is forced here, so the detectors can be shown to fire.
Each side is driven through the same input path the pool uses (XTest, X selections),
over a connection of its own, as two agents would be.
"""

from __future__ import annotations

import os
import secrets
import shutil
import time
from pathlib import Path

from cleanroom.core.odt import OdtError, odt_text
from cleanroom.environments.interface import DOCUMENT
from cleanroom.environments.pool.environment import DesktopEnvironment, EnvSpec
from cleanroom.environments.session.accounts import chown_tree
from cleanroom.environments.session.programs import Program, launch_writer, wait_ready
from cleanroom.environments.session.template import (
    LIBREOFFICE_PROFILE,
    build_template,
    warm_libreoffice_profile,
)
from cleanroom.environments.x11.clipboard import ClipboardOwner, read_selection
from cleanroom.environments.x11.xinput import XInput
from cleanroom.host_files import read_beneath

CONTROL_ROOT = Path("/var/lib/cleanroom/control")


class SideInput:
    """One side's own input connection to the shared display."""

    def __init__(self, session: SharedSession, side: str) -> None:
        self._session = session
        self._side = side
        self._xin = XInput(session.display)

    def type_into_own_window(self, text: str, delay_s: float = 0.002) -> None:
        """Type ``text`` a character at a time, giving the side's window the focus before
        each (the other side takes it back between characters)."""
        window = self._session.window_id(self._side)
        for ch in text:
            self._xin.focus(window, verify=False)
            self._xin.type_text(ch, delay_s=delay_s)

    def save(self) -> None:
        """Focus the side's window and press Ctrl+S."""
        self._xin.focus(self._session.window_id(self._side))
        time.sleep(0.2)
        self._xin.hotkey("ctrl+s")

    def close(self) -> None:
        self._xin.close()


class SideClipboard:
    """One side's own owner of the shared display's selections."""

    def __init__(self, session: SharedSession) -> None:
        self._owner = ClipboardOwner(session.display)

    def set(self, text: str) -> None:
        """Own CLIPBOARD with ``text``."""
        self._owner.set(text)

    def close(self) -> None:
        self._owner.close()


class SharedSession:
    """One display, one session, two Writers (``sides``). Use as a context manager."""

    def __init__(self, run_dir: Path, sides: tuple[str, ...], root: Path = CONTROL_ROOT) -> None:
        self.run_dir = run_dir
        self.sides = sides
        self.base = root / secrets.token_hex(3)
        self._env: DesktopEnvironment | None = None
        self._writers: dict[str, Program] = {}
        self._documents: dict[str, Path] = {}

    def __enter__(self) -> SharedSession:
        try:
            self._start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _start(self) -> None:
        self.base.mkdir(parents=True, mode=0o755)
        template = build_template(self.base / "template")
        warm_libreoffice_profile(template)
        spec = EnvSpec(
            name="control",
            user=f"crctl{self.base.name}",
            home=self.base / "home",
            runtime_dir=self.base / "run",
            log_dir=self.run_dir / "logs" / "control",
            programs=(),
        )
        env = DesktopEnvironment.create(spec, template)
        self._env = env
        env.start_desktop()
        home = env.account.home
        live = env.live
        for side in self.sides:
            profile = home / f".config/control-profile-{side}"
            shutil.copytree(home / LIBREOFFICE_PROFILE, profile)
            document = home / f"Documents/side-{side}.odt"
            shutil.copy(home / DOCUMENT, document)
            chown_tree(profile, env.account.uid, env.account.gid)
            os.chown(document, env.account.uid, env.account.gid)
            self._documents[side] = document
            self._writers[side] = launch_writer(live.session, spec.log_dir, profile, document, side)
        wait_ready(list(self._writers.values()), live.screen)
        time.sleep(1.0)  # let both windows settle before focus is moved between them

    @property
    def display(self) -> str:
        """The shared display's name."""
        assert self._env is not None
        return self._env.live.display.name

    def window_id(self, side: str) -> int:
        """The window of one side's Writer."""
        window = self._writers[side].window
        assert window is not None
        return window.id

    def input(self, side: str) -> SideInput:
        """A new input connection for ``side`` (close it when done)."""
        return SideInput(self, side)

    def clipboard(self) -> SideClipboard:
        """A new owner of the display's selections (close it when done)."""
        return SideClipboard(self)

    def read_clipboard(self) -> str | None:
        """CLIPBOARD as any client of the display reads it (None: no owner)."""
        return read_selection(self.display).text

    def saved_text(self, side: str, after: float) -> str | None:
        """The text of ``side``'s document once saved after ``after`` (a time), read
        beneath the home without following a link; None while no such save is there."""
        path = self._documents[side]
        try:
            if path.stat().st_mtime <= after:
                return None
            time.sleep(0.2)  # the save may still be writing
            assert self._env is not None
            return odt_text(read_beneath(self._env.account.home, path))
        except (OSError, OdtError):
            return None

    def close(self) -> None:
        """Stop everything and remove the temporary user and files."""
        for w in self._writers.values():
            w.stop()
        if self._env is not None:
            self._env.destroy()
        shutil.rmtree(self.base, ignore_errors=True)
