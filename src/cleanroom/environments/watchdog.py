"""The watchdog: notices dead programs or a dead display and recovers the environment.

It works on any provider (`interface.Desktops`). Recovery is the provider's `recover`: a
new generation, then a fresh display, session, home and programs. Who broke the
generation it leaves (its `breakage`, judged before anything is touched) goes with it, so
a rollout still aimed at it is scored or excluded by that rule. An environment that is
being reset is left alone (its lock is held).
"""

from __future__ import annotations

import logging
import threading

from cleanroom.environments.errors import PoolError
from cleanroom.environments.interface import Desktops

log = logging.getLogger(__name__)


class Watchdog:
    """A thread that checks every environment every ``interval_s`` seconds."""

    def __init__(self, pool: Desktops, interval_s: float = 1.0) -> None:
        self.pool = pool
        self.interval_s = interval_s
        self.recoveries: list[tuple[str, int, str]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="watchdog", daemon=True)

    def start(self) -> None:
        """Start watching."""
        self._thread.start()

    def stop(self) -> None:
        """Stop watching and wait for the thread."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=60)

    def check_once(self) -> list[str]:
        """Check every environment once; return the names recovered."""
        recovered = []
        for name in self.pool.names:
            if self._stop.is_set():
                break
            lock = self.pool.lock(name)
            if not lock.acquire(blocking=False):
                continue  # a reset or an action is running; look again next time
            try:
                broken = self.pool.breakage(name)
                if broken is None:
                    continue
                why = broken.why
                log.warning("%s: %s (%s); recovering", name, why, broken.cause)
                generation = self.pool.recover(name, why, broken)
                self.recoveries.append((name, generation, why))
                recovered.append(name)
            except PoolError as exc:
                log.error("%s: recovery failed: %s", name, exc)
            finally:
                lock.release()
        return recovered

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.check_once()
