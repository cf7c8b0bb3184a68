"""The harness loop on screen: the current window and step, rows so far, cross and lost.

A live panel on a terminal (Rich); elsewhere (a log, a pipe) one line per event, so the
record of what happened is the same either way.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType

from rich.console import Console
from rich.live import Live
from rich.table import Table

from cleanroom.core.isolation import RowResult


@dataclass
class LoopState:
    """What the panel shows."""

    window: int = 0
    windows: int | None = None  # None: until a deadline (the soak)
    step: str = "starting"
    rollouts: int = 0
    invalid: int = 0
    rows: int = 0
    cross: int = 0
    lost: int = 0
    started: float = field(default_factory=time.monotonic)


class LoopProgress:
    """Use as a context manager; call `step`, `counts` and `event` as the loop runs."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.state = LoopState()
        self._lock = threading.RLock()
        self._live: Live | None = None
        self._rows: Callable[[], dict[RowResult, int]] | None = None
        self._rows_read = 0.0

    def __enter__(self) -> LoopProgress:
        if self.console.is_terminal:
            self._live = Live(
                self._render(),
                console=self.console,
                refresh_per_second=2,
                get_renderable=self._render,
            )
            self._live.start()
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None

    def step(self, text: str, window: int | None = None) -> None:
        """The loop moved on to ``text`` (in ``window``)."""
        with self._lock:
            if window is not None:
                self.state.window = window
            self.state.step = text
        self.event(text)

    def follow_rows(self, read: Callable[[], dict[RowResult, int]] | None) -> None:
        """Refresh the row counts from ``read`` while the panel is shown (every second),
        so a long test's rows show up as its trials end; None stops it (once it returns,
        ``read`` is not running and will not be called again)."""
        with self._lock:
            self._rows = read

    def counts(self, *, rows: int, cross: int, lost: int) -> None:
        """The run's isolation row counts so far."""
        with self._lock:
            self.state.rows, self.state.cross, self.state.lost = rows, cross, lost

    def rollout_done(self, invalid: bool) -> None:
        """One more rollout ended."""
        with self._lock:
            self.state.rollouts += 1
            self.state.invalid += int(invalid)

    def event(self, text: str) -> None:
        """One line in the log above the panel."""
        elapsed = time.monotonic() - self.state.started
        label = f"w{self.state.window}" if self.state.window else "--"
        self.console.print(f"[dim]{elapsed:7.1f}s {label}[/] {text}", highlight=False)

    def _render(self) -> Table:
        with self._lock:
            if self._rows is not None and time.monotonic() - self._rows_read > 1.0:
                self._rows_read = time.monotonic()
                c = self._rows()
                self.counts(rows=sum(c.values()), cross=c[RowResult.CROSS], lost=c[RowResult.LOST])
        s = self.state
        total = "until the deadline" if s.windows is None else f"of {s.windows}"
        table = Table.grid(padding=(0, 2))
        table.add_row("[bold]window[/]", f"{s.window} {total}", "[bold]step[/]", s.step)
        table.add_row(
            "[bold]rollouts[/]",
            f"{s.rollouts} ({s.invalid} invalid)",
            "[bold]rows[/]",
            f"{s.rows} ([red]{s.cross} cross[/], [yellow]{s.lost} lost[/])",
        )
        return table
