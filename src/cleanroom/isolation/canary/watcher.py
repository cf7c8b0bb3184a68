"""The canary watcher: samples env00 (and the parked console) every 2 s and applies the
sticky rule per window.

A sample is the focused text through AT-SPI, the window list and the clipboard, each
stored as a hash (with the environments whose tokens appeared, for attribution). A
sample that cannot be read, whatever the exception, is ``lost``, and the watcher goes
on. The window's close asks the watcher whether its thread died or stalled and takes one
last look within a bounded time (`CanaryWatcher.last_look`). The rule itself is
`core.canary`; this module only reads, stores and applies it.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from cleanroom.core.canary import (
    CANARY_TEST,
    GAP_TOLERANCE_S,
    INTERVAL_S,
    PARKED_CONSOLE_TEST,
    CanarySample,
    CanaryVerdict,
    WatchSample,
    digest,
    judge_canary,
    last_good_before,
)
from cleanroom.core.outcomes import Reason
from cleanroom.core.tokens import scan_text
from cleanroom.environments.policy.handle import PolicyHandle
from cleanroom.isolation.canary.parked_console import ParkedConsole
from cleanroom.store.rundb import RunStore, RunStoreError


def _window_list_text(windows: list[dict[str, object]]) -> str:
    # Window ids and stacking are part of the state: a new or re-stacked window is a change.
    return json.dumps(
        [
            [w["id"], w["title"], w["wm_class"], w["x"], w["y"], w["width"], w["height"]]
            for w in windows
        ]
    )


def take_sample(handle: PolicyHandle, window: int | None) -> CanarySample:
    """One look at the canary through the (read-only) observation interface.

    Any exception while reading is an unreadable sample naming it, never a crash of the
    watcher: a watch that stops looking must say so, not fall silent.
    """
    at = time.time()
    try:
        handle.refresh()  # a watchdog recovery must not make every later sample lost
        focused = handle.focused_text()
        windows = handle.windows()
        clip = handle.clipboard()
        text = focused.get("document_text")
        if text is None:
            text = focused.get("text") or ""
        clip_text = json.dumps(clip, sort_keys=True)
        listing = _window_list_text(windows)
    except Exception as exc:
        detail = f"unreadable: {type(exc).__name__}: {exc}"
        return CanarySample(at, False, window=window, detail=detail)
    sources = sorted({h.env for src in (text, clip_text, listing) for h in scan_text(src)})
    return CanarySample(
        at,
        True,
        digest(text),
        digest(listing),
        digest(clip_text),
        window=window,
        sources=tuple(sources),
    )


def open_window_index(store: RunStore) -> int | None:
    """The index of the window open now, if any."""
    open_ = [w for w in store.windows() if w.ended_at is None]
    return open_[-1].index if open_ else None


class CanaryWatcher:
    """Samples every ``interval_s`` seconds in a thread, storing each sample; with a
    parked console, each tick looks at it too."""

    def __init__(
        self,
        handle: PolicyHandle,
        store: RunStore,
        *,
        interval_s: float = INTERVAL_S,
        on_sample: Callable[[CanarySample], None] | None = None,
        console: ParkedConsole | None = None,
        tolerance_s: float = GAP_TOLERANCE_S,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.handle = handle
        self.clock = clock  # when a tick ended, for the stall check
        self.store = store
        self.interval_s = interval_s
        self.tolerance_s = tolerance_s
        self.on_sample = on_sample
        self.console = console
        self.samples: list[CanarySample] = []
        self.last_beat: float | None = None  # when the thread last finished a tick
        self.died: str | None = None  # what ended the thread, if it ended on its own
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="canary", daemon=True)

    def sample_once(self) -> CanarySample:
        """Take, store and report one sample (and one of the parked console)."""
        window = open_window_index(self.store)
        sample = take_sample(self.handle, window)
        self.store.add_canary_sample(sample)
        self.samples.append(sample)
        if self.console is not None:
            self.store.add_console_sample(self.console.sample(window))
        if self.on_sample is not None:
            self.on_sample(sample)
        return sample

    def start(self) -> None:
        """Start sampling in the background."""
        self.last_beat = self.clock()
        self._thread.start()

    def stop(self) -> None:
        """Stop sampling."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=30)

    def run_forever(self, until: Callable[[], bool] = lambda: False) -> None:
        """Sample in this thread until ``until()`` is true or `stop` is called."""
        next_at = time.monotonic()
        while not self._stop.is_set() and not until():
            self.sample_once()
            self.last_beat = self.clock()
            next_at += self.interval_s
            self._stop.wait(max(0.0, next_at - time.monotonic()))

    def faults(self) -> list[str]:
        """What is wrong with the sampling thread: it died, or it has finished no tick for
        longer than the gap tolerance (stalled, e.g. blocked in a read). Empty when it
        was never started (the caller samples) or was stopped on purpose."""
        if self.last_beat is None or self._stop.is_set():
            return []
        if not self._thread.is_alive():
            return [f"the canary watcher's thread died: {self.died or 'it ended'}"]
        since = self.clock() - self.last_beat
        if since > self.tolerance_s:
            return [f"the canary watcher's thread has finished no sample for {since:.1f} s"]
        return []

    def last_look(self) -> list[str]:
        """The window's close: the thread's faults, then one more sample, given at most
        the gap tolerance (a read that blocks must not hold the window open for good)."""
        faults = self.faults()
        timeout_s = self.tolerance_s
        done = threading.Event()
        failed: list[str] = []

        def look() -> None:
            try:
                self.sample_once()
            except Exception as exc:  # a store that refuses the sample: said, not raised
                failed.append(f"the window's last look failed: {type(exc).__name__}: {exc}")
            finally:
                done.set()

        threading.Thread(target=look, name="canary-last-look", daemon=True).start()
        if not done.wait(timeout_s):
            failed.append(f"the window's last look did not return within {timeout_s:g} s")
        return faults + failed

    def _run(self) -> None:
        try:
            self.run_forever()
        except Exception as exc:  # e.g. the store refused a sample: faults() reports it
            self.died = f"{type(exc).__name__}: {exc}"


@dataclass(frozen=True)
class AppliedVerdict:
    """A window's verdict of one watch and how many rollouts it invalidated."""

    verdict: CanaryVerdict
    invalidated: int


@dataclass(frozen=True)
class Watched:
    """What a watch looks at: its samples in the run database, the test its rows are of,
    and how an invalidation names it."""

    samples: Callable[[RunStore], Sequence[WatchSample]]
    test: str
    what: str


CANARY = Watched(RunStore.canary_samples, CANARY_TEST, "canary env00")
PARKED_CONSOLE = Watched(
    RunStore.console_samples, PARKED_CONSOLE_TEST, "the parked console in env00"
)


def apply_watch(
    watched: Watched,
    store: RunStore,
    window_index: int,
    *,
    faults: Sequence[str] = (),
    until: float | None = None,
    tolerance_s: float = GAP_TOLERANCE_S,
) -> AppliedVerdict:
    """Judge a window's samples of ``watched`` (`CANARY`, `PARKED_CONSOLE`), store the
    rows, and invalidate (``isolation``) every rollout of the window that ended at or
    after the first event.

    ``faults`` are the watcher's own (`CanaryWatcher.last_look`), each a lost row;
    ``until`` ends a window not yet closed for the coverage rule (default: now).
    """
    samples = watched.samples(store)
    return _apply(
        store, window_index, samples, watched.test, watched.what, faults, until, tolerance_s
    )


def _apply(
    store: RunStore,
    window_index: int,
    samples: Sequence[WatchSample],
    test: str,
    what: str,
    faults: Sequence[str],
    until: float | None,
    tolerance_s: float,
) -> AppliedVerdict:
    windows = {w.index: w for w in store.windows()}
    if window_index not in windows:
        raise RunStoreError(f"no window {window_index} in this run")
    window = windows[window_index]
    verdict, rows = judge_canary(
        window,
        samples,
        last_good_before(samples, window.started_at),
        until=time.time() if until is None else until,
        faults=faults,
        test=test,
        tolerance_s=tolerance_s,
    )
    store.add_isolation_rows(rows)
    invalidated = 0
    if verdict.first_event_at is not None:
        invalidated = store.invalidate_rollouts(
            window_index,
            verdict.first_event_at,
            Reason.ISOLATION,
            f"{what} changed inside window {window_index}: {'; '.join(verdict.changes)}",
        )
    return AppliedVerdict(verdict, invalidated)
