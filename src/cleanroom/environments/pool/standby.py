"""Warm standby: each environment's next generation, made ready before the reset asks.

A reset in place ends an environment's programs and starts them again, and most of its
time is Writer's own start. With warm standby every acting environment has two slots,
each with its own Unix user, home, runtime folder, display, sandbox, session bus and
programs. One slot is the environment; the other is brought up in the background from
the template. A reset (or a recovery) raises the generation, swaps the slots and ends
every process of the old slot before it returns; wiping the old slot's home and bringing
it up again as the next spare happen in the background.

What a generation could touch is never handed to the next: the slot that comes in was
made from the template on a display of its own, by a user whose processes all ended
with the slot's last generation, and the slot that goes out is wiped before it is used
again. Generations, the refusal of stale actions and the watchdog are the pool's, and
stay as they are: this module only keeps the spares.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass

from cleanroom.environments.pool.environment import DesktopEnvironment

log = logging.getLogger(__name__)

# Spares brought up at once: each start is mostly Writer's, which takes a core for about
# two seconds; two at a time leave the acting environments a core on a 2-core machine.
PREPARERS = 2
# How long a reset waits for a spare that is still coming up before it resets in place.
TAKE_TIMEOUT_S = 60.0


@dataclass
class Spare:
    """One environment's other slot and its bringing up."""

    slot: DesktopEnvironment
    ready: Future[None]


class Standby:
    """The spare slots of a pool's environments, brought up by a small pool of threads."""

    def __init__(self) -> None:
        self._executor = ThreadPoolExecutor(max_workers=PREPARERS, thread_name_prefix="standby")
        self._spares: dict[str, Spare] = {}
        self._lock = threading.Lock()
        self._closed = False
        self.failures: list[tuple[str, str]] = []  # (environment, why its spare failed)

    def bring_up(self, name: str, slot: DesktopEnvironment) -> None:
        """Make ``slot`` the spare of ``name``: wiped (if it ran a generation) and started
        in the background. Its processes must already have ended (`retire`)."""
        with self._lock:
            if not self._closed:
                self._spares[name] = Spare(slot, self._executor.submit(_bring_up, slot))
                return
        slot.destroy()  # the pool is stopping: a slot handed back now goes at once

    def take(self, name: str, timeout_s: float = TAKE_TIMEOUT_S) -> DesktopEnvironment | None:
        """The spare of ``name`` once it is up, no longer a spare; None when there is none
        or it could not come up (then it is kept, retired, to be brought up again)."""
        with self._lock:
            spare = self._spares.pop(name, None)
        if spare is None:
            return None
        try:
            spare.ready.result(timeout=timeout_s)
        except FutureTimeout:
            why = f"not up within {timeout_s:g} s"
        except Exception as exc:  # whatever failed, the reset goes on in place
            why = f"{type(exc).__name__}: {exc}"
        else:
            problems = spare.slot.problems()
            if not problems:
                return spare.slot
            why = "; ".join(problems)
        log.warning("%s: the spare slot is not usable (%s); resetting in place", name, why)
        self.failures.append((name, why))
        spare.ready.cancel()
        if spare.ready.done():
            retire(spare.slot)
            self.bring_up(name, spare.slot)
        else:  # still starting: kept, so that the next reset or `close` finds it
            with self._lock:
                self._spares.setdefault(name, spare)
        return None

    def spare(self, name: str) -> DesktopEnvironment | None:
        """The spare slot of ``name`` if it is up (to look at, never to act on)."""
        with self._lock:
            spare = self._spares.get(name)
        if spare is None or not spare.ready.done() or spare.ready.exception() is not None:
            return None
        return spare.slot

    def state(self, name: str) -> str:
        """``up``, ``coming up``, ``failed`` or ``none``, for status pages."""
        with self._lock:
            spare = self._spares.get(name)
        if spare is None:
            return "none"
        if not spare.ready.done():
            return "coming up"
        return "failed" if spare.ready.exception() is not None else "up"

    def wait_ready(self, name: str, timeout_s: float) -> bool:
        """Wait until the spare of ``name`` is up; False if there is none, it failed, or
        it took longer than ``timeout_s``."""
        with self._lock:
            spare = self._spares.get(name)
        if spare is None:
            return False
        try:
            spare.ready.result(timeout=timeout_s)
        except Exception:
            return False
        return True

    def close(self) -> list[DesktopEnvironment]:
        """Stop bringing spares up (a start under way finishes first) and hand every
        spare slot back, for the pool to destroy."""
        with self._lock:
            self._closed = True
            spares = list(self._spares.values())
            self._spares.clear()
        for spare in spares:
            spare.ready.cancel()
        self._executor.shutdown(wait=True)
        return [s.slot for s in spares]


def retire(slot: DesktopEnvironment) -> None:
    """End every process of a slot (what a reset does before it returns). Its display,
    which holds no process of the old generation once they are gone, is ended by the
    slot's bring-up in the background (`_bring_up`), off the reset's path."""
    slot.end_processes()


def _bring_up(slot: DesktopEnvironment) -> None:
    slot.stop_desktop()  # nothing runs after `retire`; a failed start may have left some
    slot.restore_home()
    slot.start_desktop()
    slot.start_programs()
