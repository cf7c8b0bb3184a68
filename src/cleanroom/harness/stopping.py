"""Stopping the harness on Ctrl-C (SIGINT) or SIGTERM.

The first signal raises `StopRequested` in the main thread, wherever it is, so a long
isolation trial does not delay the stop; the clean-up in ``finally`` blocks then stops
the pool and the verify server. Signals that arrive during that clean-up are ignored, so
it runs to the end and leaves nothing behind.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

EXIT_CODES = {"SIGINT": 130, "SIGTERM": 143}


class StopRequested(BaseException):
    """A stop signal arrived. A BaseException, so that no ``except Exception`` that turns
    faults into lost rows or invalid outcomes swallows it."""

    def __init__(self, signal_name: str) -> None:
        super().__init__(f"stopped by {signal_name}")
        self.signal_name = signal_name

    @property
    def exit_code(self) -> int:
        """The conventional exit status of a process ended by this signal."""
        return EXIT_CODES.get(self.signal_name, 1)


@contextmanager
def stop_on_signals(stopping: threading.Event) -> Iterator[threading.Event]:
    """Within the block, SIGINT and SIGTERM set ``stopping`` and raise `StopRequested`
    once. Outside the main thread nothing is installed (only it receives signals)."""
    if threading.current_thread() is not threading.main_thread():
        yield stopping
        return

    def handle(signum: int, frame: FrameType | None) -> None:
        if stopping.is_set():
            return  # already stopping: let the clean-up finish
        stopping.set()
        raise StopRequested(signal.Signals(signum).name)

    previous = {s: signal.signal(s, handle) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stopping
    finally:
        for s, old in previous.items():
            signal.signal(s, old)
