"""The parked console: a second canary, a terminal in env00 that nothing acts on.

It is a ``tmux`` session holding an idle shell prompt, started as env00's account inside
its sandbox (`DesktopEnvironment.run_inside`), with a socket of its own in env00's
runtime folder. tmux keeps the pane's text on its server, so the harness reads it from
outside the sandbox (``capture-pane``; root may talk to any tmux server) without running
anything in env00 for each look. A look hashes the pane's visible text and its history
size, and names the environments whose tokens appear in the text; the canary watcher
takes one with every look at env00, and `core.canary.judge_canary` judges them by the
same sticky rule, as rows of `PARKED_CONSOLE_TEST`.

Why tmux: the pane's text is the console's whole visible state, readable exactly and
without a display, and keys can be sent into it from outside for the console's planted
control (`send_text`), the way a leak would type into it.
"""

from __future__ import annotations

import contextlib
import subprocess
import time
from pathlib import Path

from cleanroom.core.canary import CANARY_ENV, ConsoleSample, digest
from cleanroom.core.tokens import scan_text
from cleanroom.environments.errors import PoolError
from cleanroom.environments.interface import Desktops
from cleanroom.lifecycle import wait_until

SESSION = "parked"
SOCKET_NAME = "parked-console.sock"
# A prompt without user, host, folder or time in it: nothing that changes on its own.
SHELL = "exec env PS1='$ ' HISTFILE=/dev/null bash --norc --noprofile -i"
READ_TIMEOUT_S = 5.0
START_TIMEOUT_S = 15.0
SETTLE_S = 10.0
_SETTLE_POLL_S = 0.2
_TMUX_ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}


class ConsoleUnavailable(PoolError):
    """The parked console could not be started or read."""


class ParkedConsole:
    """A running parked console in the pool's canary; start with `start`."""

    def __init__(self, pool: Desktops) -> None:
        self.pool = pool
        # In env00's runtime folder: writable in its sandbox, the same folder outside.
        self.socket: Path = pool.places(CANARY_ENV).runtime_dir / SOCKET_NAME
        self.generation = -1  # env00's generation the console was last started in

    @classmethod
    def start(cls, pool: Desktops) -> ParkedConsole:
        """Start the console in env00 and return once its prompt shows and holds still;
        `ConsoleUnavailable` says why it could not."""
        console = cls(pool)
        console._launch()
        return console

    def sample(self, window: int | None) -> ConsoleSample:
        """One look at the pane; any failure is an unreadable sample naming it.

        After a recovery of env00 (a new generation: its sandbox and every process of
        the account were replaced) the console is started again, and that look is lost.
        """
        at = time.time()
        try:
            generation = self.pool.generation(CANARY_ENV)
            if generation != self.generation:
                self._launch()
                raise ConsoleUnavailable(
                    f"env00 was recovered (generation {generation}); the console was started again"
                )
            text, history = self.read()
        except Exception as exc:
            detail = f"unreadable: {type(exc).__name__}: {exc}"
            return ConsoleSample(at, False, window=window, detail=detail)
        sources = tuple(sorted({h.env for h in scan_text(text)}))
        return ConsoleSample(at, True, digest(text), history, window=window, sources=sources)

    def read(self) -> tuple[str, int]:
        """The pane's visible text and its history size (lines scrolled out of view)."""
        out = self._tmux(
            "capture-pane", "-p", "-t", SESSION, ";",
            "display-message", "-p", "-t", SESSION, "#{history_size}",
        )  # fmt: skip
        text, _, history = out.rstrip("\n").rpartition("\n")
        try:
            return text, int(history)
        except ValueError:
            raise ConsoleUnavailable(f"tmux gave no history size: {history!r}") from None

    def send_text(self, text: str) -> None:
        """Type ``text`` at the prompt (not run): what a leak into the console would do."""
        self._tmux("send-keys", "-t", SESSION, "-l", text)

    def clear_line(self) -> None:
        """Erase what was typed at the prompt (readline's kill-line)."""
        self._tmux("send-keys", "-t", SESSION, "C-u")

    def stop(self) -> None:
        """End the console's tmux server (the sandbox's end would take it anyway)."""
        with contextlib.suppress(ConsoleUnavailable):
            self._tmux("kill-server")

    def _launch(self) -> None:
        with self.pool.lock(CANARY_ENV):
            self.generation = self.pool.generation(CANARY_ENV)
            argv = ["tmux", "-S", str(self.socket), "-f", "/dev/null",
                    "new-session", "-d", "-s", SESSION, "-x", "100", "-y", "30", SHELL]  # fmt: skip
            try:
                done = self.pool.run_inside(CANARY_ENV, argv, timeout_s=START_TIMEOUT_S)
            except (OSError, subprocess.TimeoutExpired, PoolError) as exc:
                raise ConsoleUnavailable(f"tmux did not start in env00: {exc}") from exc
        code, out = done.code, done.output
        if code != 0:
            raise ConsoleUnavailable(f"tmux did not start in env00 (exit {code}): {out.strip()}")
        self._settle()

    def _settle(self) -> None:
        # The shell draws its prompt after tmux returns: wait until the pane shows it and
        # two looks agree, so the first sample is not taken mid-draw.
        last: tuple[str, int] | None = None

        def agreed() -> bool:
            nonlocal last
            now, before = self.read(), last
            last = now
            return bool(now[0].strip()) and now == before

        if not wait_until(agreed, SETTLE_S, _SETTLE_POLL_S):
            raise ConsoleUnavailable(f"the console's prompt did not settle within {SETTLE_S:g} s")

    def _tmux(self, *args: str) -> str:
        try:
            done = subprocess.run(
                ["tmux", "-S", str(self.socket), *args],
                capture_output=True,
                text=True,
                timeout=READ_TIMEOUT_S,
                env=_TMUX_ENV,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ConsoleUnavailable(f"tmux {args[0]}: {exc}") from exc
        if done.returncode != 0:
            raise ConsoleUnavailable(f"tmux {args[0]}: {done.stderr.strip() or done.returncode}")
        return done.stdout
