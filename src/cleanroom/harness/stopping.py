"""Stopping the harness on Ctrl-C (SIGINT) or SIGTERM.

The first signal raises `StopRequested` in the main thread, wherever it is, so a long
isolation trial does not delay the stop; the clean-up in ``finally`` blocks then stops
the pool and the verify server. Signals that arrive during that clean-up are ignored, so
it runs to the end and leaves nothing behind.

A command whose work runs in threads it cannot interrupt (`cleanroom verify`) uses
`exit_on_signals` instead: the first signal runs its clean-up, then the process exits.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
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


@contextmanager
def exit_on_signals(clean_up: Callable[[str], None]) -> Iterator[None]:
    """Within the block, the first SIGINT or SIGTERM runs ``clean_up`` (given the
    signal's name) in a thread of its own, then ends the process with the signal's
    conventional status; later signals are ignored, so the clean-up runs to its end.

    The handler only starts the thread: the main thread may hold a lock the clean-up
    needs (a connection pool's), so it goes on until the process ends. Threads doing
    the work are not waited for: the clean-up is what stops their effects. Outside the
    main thread nothing is installed."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    begun = threading.Event()

    def end(name: str) -> None:
        try:
            clean_up(name)
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(EXIT_CODES.get(name, 1))

    def handle(signum: int, frame: FrameType | None) -> None:
        if begun.is_set():
            return
        begun.set()
        # Not a daemon: an interpreter that ends meanwhile waits for it.
        threading.Thread(target=end, args=(signal.Signals(signum).name,), name="stop").start()

    previous = {s: signal.signal(s, handle) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        if not begun.is_set():
            for s, old in previous.items():
                signal.signal(s, old)
