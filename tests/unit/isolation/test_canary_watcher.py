"""The canary watcher keeps looking whatever a read raises, and a watcher that stopped
looking (a dead or stalled thread) is lost when its window is judged."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from cleanroom.core.isolation import RowResult, judge_window
from cleanroom.isolation.canary.watcher import CANARY, CanaryWatcher, apply_watch, take_sample
from cleanroom.store.rundb import RunStore

QUIET: dict[str, Any] = {
    "focused_text": {"text": "", "document_text": ""},
    "windows": [],
    "clipboard": {"CLIPBOARD": None, "PRIMARY": None},
}


class _FakeHandle:
    """A canary handle on fakes: readable ``good`` times, then it raises or blocks."""

    env = "env00"
    generation = 0

    def __init__(self, good: int = 0, fail: Exception | None = None) -> None:
        self.good = good
        self.fail = fail
        self.reads = 0
        self.blocked = threading.Event()
        self.release = threading.Event()

    def refresh(self) -> int:
        return 0

    def observe(self, what: str) -> Any:
        if what == "focused_text":
            self.reads += 1
        if self.reads > self.good:
            if self.fail is not None:
                raise self.fail
            self.blocked.set()
            self.release.wait()  # blocks, as a read stuck on a dead bus would
        return QUIET[what]

    def focused_text(self) -> Any:
        return self.observe("focused_text")

    def windows(self) -> Any:
        return self.observe("windows")

    def clipboard(self) -> Any:
        return self.observe("clipboard")


class _HandClock:
    """Wall-clock time that moves only when the test moves it."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


def _watcher(handle: _FakeHandle, store: RunStore, **kw: Any) -> CanaryWatcher:
    return CanaryWatcher(handle, store, **kw)  # type: ignore[arg-type]


def test_any_exception_while_reading_is_a_lost_sample_naming_it() -> None:
    sample = take_sample(_FakeHandle(fail=RuntimeError("the bus went away")), 1)  # type: ignore[arg-type]
    assert not sample.ok
    assert sample.detail == "unreadable: RuntimeError: the bus went away"


def test_reads_that_raise_give_lost_samples_and_the_thread_keeps_going(tmp_path: Path) -> None:
    with RunStore.create(tmp_path) as store:
        five = threading.Event()

        def count(_: object) -> None:
            if len(watcher.samples) >= 5:
                five.set()

        handle = _FakeHandle(fail=RuntimeError("boom"))
        watcher = _watcher(handle, store, interval_s=0.01, on_sample=count)
        watcher.start()
        assert five.wait(5), "the watcher stopped looking before its fifth sample"
        alive = watcher._thread.is_alive()
        faults = watcher.faults()
        watcher.stop()
        stored = store.canary_samples()
    assert len(watcher.samples) >= 5 and alive and faults == []
    assert all(not s.ok and "RuntimeError: boom" in s.detail for s in stored)


def test_a_stalled_watcher_is_lost_when_its_window_is_judged(tmp_path: Path) -> None:
    handle = _FakeHandle(good=2)
    with RunStore.create(tmp_path) as store:
        store.open_window(1)
        clock = _HandClock()
        watcher = _watcher(handle, store, interval_s=0.01, tolerance_s=0.2, clock=clock)
        watcher.start()
        assert handle.blocked.wait(5)  # the thread took two looks, then hangs in its third read
        clock.now += 0.5  # and finishes no sample for longer than the tolerance
        faults = watcher.last_look()  # the close's own look hangs too, within its bound
        applied = apply_watch(CANARY, store, 1, faults=faults, until=clock(), tolerance_s=0.2)
        rows = store.isolation_rows(1)
        handle.release.set()
        watcher.stop()
    lost = [r.detail for r in rows if r.result is RowResult.LOST]
    assert any("no readable look" in d and "window's end" in d for d in lost)  # the gap
    assert any("finished no sample" in d for d in lost)  # the stalled thread
    assert any("last look did not return" in d for d in lost)
    assert applied.verdict.largest_gap_s is not None and applied.verdict.largest_gap_s > 0.2
    assert judge_window(1, rows).failed


def test_a_dead_watcher_thread_is_named_at_the_close(tmp_path: Path) -> None:
    with RunStore.create(tmp_path) as store:
        watcher = _watcher(_FakeHandle(good=100), store, interval_s=0.01)
        store.close()  # every later write fails: the thread dies on its first sample
        watcher.start()
        watcher._thread.join(timeout=5)
        faults = watcher.faults()
    assert len(faults) == 1 and "thread died: ProgrammingError" in faults[0]
