"""Run one step in several environments at the same moment, one thread each."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")

_START_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Outcome(Generic[T]):
    """What one environment's step returned or raised, and when it was released."""

    value: T | None
    error: BaseException | None
    released_at: float  # time.time() when the step left the starting barrier

    @property
    def ok(self) -> bool:
        return self.error is None


def at_once(steps: dict[str, Callable[[], T]]) -> dict[str, Outcome[T]]:
    """Start every step at one moment (a barrier) and wait for all of them.

    A step that raises does not stop the others; its error is in its `Outcome`.
    """
    barrier = threading.Barrier(len(steps), timeout=_START_TIMEOUT_S)
    results: dict[str, Outcome[T]] = {}
    lock = threading.Lock()

    def run(name: str, step: Callable[[], T]) -> None:
        released = time.time()
        try:
            barrier.wait()
            released = time.time()
            value = step()
        except BaseException as exc:  # recorded for the caller, which decides
            with lock:
                results[name] = Outcome(None, exc, released)
            return
        with lock:
            results[name] = Outcome(value, None, released)

    threads = [
        threading.Thread(target=run, args=(n, s), name=f"at-once-{n}") for n, s in steps.items()
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results
