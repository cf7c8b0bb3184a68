"""The canary watcher: samples env00 every 2 s and applies the sticky rule per window.

A sample is the focused text through AT-SPI, the window list and the clipboard, each
stored as a hash (with the environments whose tokens appeared, for attribution). A
sample that cannot be read is ``lost``. The rule itself is `core.canary`; this module
only reads, stores and applies it.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from cleanroom.core.canary import (
    CanarySample,
    CanaryVerdict,
    digest,
    judge_canary,
    last_good_before,
)
from cleanroom.core.outcomes import Reason
from cleanroom.core.tokens import scan_text
from cleanroom.environments.errors import PoolError
from cleanroom.environments.policy import PolicyHandle
from cleanroom.store.rundb import RunStore, RunStoreError

INTERVAL_S = 2.0


def _window_list_text(windows: list[dict[str, object]]) -> str:
    # Window ids and stacking are part of the state: a new or re-stacked window is a change.
    return json.dumps(
        [
            [w["id"], w["title"], w["wm_class"], w["x"], w["y"], w["width"], w["height"]]
            for w in windows
        ]
    )


def take_sample(handle: PolicyHandle, window: int | None) -> CanarySample:
    """One look at the canary through the (read-only) observation interface."""
    at = time.time()
    try:
        handle.refresh()  # a watchdog recovery must not make every later sample lost
        focused = handle.focused_text()
        windows = handle.windows()
        clip = handle.clipboard()
    except PoolError as exc:
        return CanarySample(at, False, window=window, detail=f"unreadable: {exc}")
    text = focused.get("document_text")
    if text is None:
        text = focused.get("text") or ""
    clip_text = json.dumps(clip, sort_keys=True)
    listing = _window_list_text(windows)
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
    """Samples every ``interval_s`` seconds in a thread, storing each sample."""

    def __init__(
        self,
        handle: PolicyHandle,
        store: RunStore,
        *,
        interval_s: float = INTERVAL_S,
        on_sample: Callable[[CanarySample], None] | None = None,
    ) -> None:
        self.handle = handle
        self.store = store
        self.interval_s = interval_s
        self.on_sample = on_sample
        self.samples: list[CanarySample] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="canary", daemon=True)

    def sample_once(self) -> CanarySample:
        """Take, store and report one sample."""
        sample = take_sample(self.handle, open_window_index(self.store))
        self.store.add_canary_sample(sample)
        self.samples.append(sample)
        if self.on_sample is not None:
            self.on_sample(sample)
        return sample

    def start(self) -> None:
        """Start sampling in the background."""
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
            next_at += self.interval_s
            self._stop.wait(max(0.0, next_at - time.monotonic()))

    def _run(self) -> None:
        self.run_forever()


@dataclass(frozen=True)
class AppliedVerdict:
    """A window's canary verdict and how many rollouts it invalidated."""

    verdict: CanaryVerdict
    invalidated: int


def apply_canary(store: RunStore, window_index: int) -> AppliedVerdict:
    """Judge a window's canary samples, store the rows, and invalidate (``isolation``)
    every rollout of the window that ended at or after the first event."""
    windows = {w.index: w for w in store.windows()}
    if window_index not in windows:
        raise RunStoreError(f"no window {window_index} in this run")
    window = windows[window_index]
    samples = store.canary_samples()
    verdict, rows = judge_canary(window, samples, last_good_before(samples, window.started_at))
    store.add_isolation_rows(rows)
    invalidated = 0
    if verdict.first_event_at is not None:
        invalidated = store.invalidate_rollouts(
            window_index,
            verdict.first_event_at,
            Reason.ISOLATION,
            f"canary env00 changed inside window {window_index}: {'; '.join(verdict.changes)}",
        )
    return AppliedVerdict(verdict, invalidated)
