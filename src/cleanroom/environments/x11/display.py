"""Xvfb: one virtual X display per environment, admitting only clients with its cookie."""

from __future__ import annotations

import random
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

from cleanroom.environments.errors import StartError
from cleanroom.environments.x11.xauth import grant_harness, new_cookie, write_cookie
from cleanroom.lifecycle import stop_group, wait_until

_SOCKET_DIR = Path("/tmp/.X11-unix")
_FIRST, _LAST = 120, 900
_START_TIMEOUT_S = 10.0
_ANSWER_TIMEOUT_S = 2.0  # from the socket appearing to the server taking clients
# Displays of one process start one at a time: two threads that picked the same free
# number would each grant the harness their own cookie for it, and one display would
# then refuse the harness. Other processes are told apart by the lost race below.
_STARTING = threading.Lock()


@dataclass(frozen=True)
class ScreenSize:
    """Width, height and depth of a virtual screen."""

    width: int = 1280
    height: int = 800
    depth: int = 24

    def xvfb_arg(self) -> str:
        """The ``-screen 0`` argument Xvfb takes."""
        return f"{self.width}x{self.height}x{self.depth}"


def _taken(number: int) -> bool:
    return Path(f"/tmp/.X{number}-lock").exists() or (_SOCKET_DIR / f"X{number}").exists()


class XvfbDisplay:
    """A running Xvfb server; `stop` ends it."""

    def __init__(
        self, number: int, proc: subprocess.Popen[bytes], cookie: str, size: ScreenSize
    ) -> None:
        self.number = number
        self.proc = proc
        self.cookie = cookie
        self.size = size

    @property
    def name(self) -> str:
        """The DISPLAY value, such as ``:123``."""
        return f":{self.number}"

    @property
    def pid(self) -> int:
        return self.proc.pid

    @classmethod
    def start(
        cls, authority: Path, size: ScreenSize | None = None, *, log: Path | None = None
    ) -> XvfbDisplay:
        """Start Xvfb on a free display number that admits the cookie written to ``authority``.

        The harness process is granted the same cookie. Returns once the display answers.
        """
        with _STARTING:
            return cls._start(authority, size or ScreenSize(), log)

    @classmethod
    def _start(cls, authority: Path, size: ScreenSize, log: Path | None) -> XvfbDisplay:
        cookie = new_cookie()
        candidates = list(range(_FIRST, _LAST))
        random.shuffle(candidates)  # two pools starting at once rarely race for one number
        for number in candidates:
            if _taken(number):
                continue
            write_cookie(authority, number, cookie)
            grant_harness(number, cookie)
            argv = [
                "Xvfb", f":{number}", "-screen", "0", size.xvfb_arg(), "-nolisten", "tcp",
                "-auth", str(authority), "-noreset", "+extension", "XTEST",
            ]  # fmt: skip
            out = open(log, "ab") if log else subprocess.DEVNULL  # noqa: SIM115
            try:
                proc = subprocess.Popen(
                    argv, stdout=out, stderr=out, stdin=subprocess.DEVNULL, start_new_session=True
                )
            finally:
                if log:
                    out.close()  # type: ignore[union-attr]
            display = cls(number, proc, cookie, size)
            if display._wait_ready():
                return display
            display.stop()  # lost a race for this number, or Xvfb failed: try the next
        raise StartError("no free X display number could be started")

    def _wait_ready(self) -> bool:
        sock = _SOCKET_DIR / f"X{self.number}"
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

    def stop(self) -> None:
        """End the server and wait for it."""
        stop_group(self.proc, 5.0)
