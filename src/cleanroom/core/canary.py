"""The canary's rule: `env00` never receives an action, so any change in it is a leak.

A watcher samples the canary every few seconds (the focused text through AT-SPI, the
window list, a hash of the clipboard) and, beside it, the parked console (a terminal in
env00 that nothing acts on). Within a window, a sample that differs from the one before
it is a contamination event; the flag is sticky, so every rollout of that window that
ends after the first event is invalid (``isolation``). A sample that could not be read
is ``lost`` and fails the window.

Coverage: a watch that was not looking saw nothing. Every span of a window longer than
`GAP_TOLERANCE_S` without a readable look (from the window's start to the first look,
between two looks, from the last look to the window's end) is a ``lost`` row too.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import ClassVar, Protocol, TypeVar

from cleanroom.core.isolation import CANARY_TEST as CANARY_TEST  # re-exported
from cleanroom.core.isolation import PARKED_CONSOLE_TEST as PARKED_CONSOLE_TEST  # re-exported
from cleanroom.core.isolation import IsolationRow, RowResult, Window

CANARY_ENV = "env00"
UNKNOWN_ENV = "unknown"

# The watcher looks every 2 s.
INTERVAL_S = 2.0
# Three intervals: one look that is late or slow (an AT-SPI read on a loaded machine)
# stays within it, while a longer span means at least two looks in a row were missing,
# which is a blind spot and not jitter. Measured runs look every 2.0 s, even under the
# demo's load.
GAP_TOLERANCE_S = 3 * INTERVAL_S


class WatchSample(Protocol):
    """One look at a watched thing: when, whether it could be read, and what it showed.

    ``state`` is what is compared between looks, ``PARTS`` names its items (for the
    event's description), ``sources`` the environments whose tokens appeared in it.
    """

    PARTS: ClassVar[tuple[str, ...]]

    @property
    def at(self) -> float: ...

    @property
    def ok(self) -> bool: ...

    @property
    def detail(self) -> str: ...

    @property
    def sources(self) -> tuple[str, ...]: ...

    @property
    def state(self) -> tuple[object, ...]: ...


Sample = TypeVar("Sample", bound=WatchSample)


@dataclass(frozen=True)
class CanarySample:
    """One look at the canary: hashes of what it showed, or why it could not be read.

    ``sources`` names the environments whose tokens appeared in what was read, so a
    change can be attributed when the leaked text carries a token.
    """

    PARTS: ClassVar[tuple[str, ...]] = ("focused text", "window list", "clipboard")

    at: float
    ok: bool
    focused_text_sha256: str | None = None
    window_list_sha256: str | None = None
    clipboard_sha256: str | None = None
    window: int | None = None
    detail: str = ""
    sources: tuple[str, ...] = field(default=(), compare=False)

    @property
    def state(self) -> tuple[str | None, str | None, str | None]:
        return (self.focused_text_sha256, self.window_list_sha256, self.clipboard_sha256)


@dataclass(frozen=True)
class ConsoleSample:
    """One look at the parked console: a hash of its pane's visible text and the size of
    its history (a line scrolled out of view still grows it), or why it could not be read."""

    PARTS: ClassVar[tuple[str, ...]] = ("pane text", "history size")

    at: float
    ok: bool
    pane_sha256: str | None = None
    history_size: int | None = None
    window: int | None = None
    detail: str = ""
    sources: tuple[str, ...] = field(default=(), compare=False)

    @property
    def state(self) -> tuple[str | None, int | None]:
        return (self.pane_sha256, self.history_size)


def digest(data: str | bytes | None) -> str | None:
    """The SHA-256 a sample stores in place of what it read (None stays None)."""
    if data is None:
        return None
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    return hashlib.sha256(raw).hexdigest()


@dataclass(frozen=True)
class Gap:
    """A span of a window without a readable look."""

    start: float
    end: float
    where: str

    @property
    def seconds(self) -> float:
        return self.end - self.start


def coverage_gaps(window: Window, looks: Iterable[float], until: float | None = None) -> list[Gap]:
    """Every span without a look inside the window: from its start to the first look,
    between consecutive looks, and from the last look to its end (``window.ended_at``,
    else ``until``; with neither, the spans stop at the last look)."""
    end = window.ended_at if window.ended_at is not None else until
    times = sorted(t for t in looks if window.contains(t))
    if end is not None:
        times = [t for t in times if t <= end]
    if not times:
        if end is None:
            return []
        return [Gap(window.started_at, end, "the whole window, without a readable look")]
    gaps = [Gap(window.started_at, times[0], "from the window's start to the first look")]
    gaps += [Gap(a, b, "between two looks") for a, b in pairwise(times)]
    if end is not None:
        gaps.append(Gap(times[-1], max(end, times[-1]), "from the last look to the window's end"))
    return gaps


def largest_gap(
    window: Window, samples: Iterable[WatchSample], until: float | None = None
) -> float | None:
    """The longest span of the window without a readable look (None: nothing to measure)."""
    gaps = coverage_gaps(window, (s.at for s in samples if s.ok), until)
    return max((g.seconds for g in gaps), default=None)


@dataclass(frozen=True)
class CanaryVerdict:
    """What a watch (the canary, or the parked console) saw in one window."""

    window: int
    first_event_at: float | None
    changes: list[str]
    lost: int
    samples: int
    largest_gap_s: float | None = None
    tolerance_s: float = GAP_TOLERANCE_S

    @property
    def flagged(self) -> bool:
        return self.first_event_at is not None


def _what_changed(before: WatchSample, after: WatchSample) -> list[str]:
    pairs = zip(after.PARTS, before.state, after.state, strict=True)
    return [name for name, a, b in pairs if a != b]


def judge_canary(
    window: Window,
    samples: Sequence[Sample],
    baseline: Sample | None = None,
    *,
    until: float | None = None,
    faults: Sequence[str] = (),
    test: str = CANARY_TEST,
    tolerance_s: float = GAP_TOLERANCE_S,
) -> tuple[CanaryVerdict, list[IsolationRow]]:
    """Judge one window's samples of a watch against the last good state before it.

    Returns the verdict and one isolation row (of ``test``) per sample inside the window:
    ``cross`` for a sample whose state differs from the previous good one, ``lost`` for
    an unreadable sample, ``clean`` otherwise; then one ``lost`` row per span without a
    readable look longer than ``tolerance_s`` (see `coverage_gaps`; ``until`` is the end
    of a window not yet closed), and one per fault of the watcher itself (a thread that
    died or stalled). The baseline is the last readable sample before the window;
    without one, the window's first readable sample is the baseline.
    """
    inside = sorted((s for s in samples if window.contains(s.at)), key=lambda s: s.at)
    previous = baseline
    first_event: float | None = None
    changes: list[str] = []
    rows: list[IsolationRow] = []
    lost = 0
    for trial, sample in enumerate(inside):
        if not sample.ok:
            lost += 1
            rows.append(_row(test, window, trial, UNKNOWN_ENV, RowResult.LOST, sample.detail))
            continue
        if previous is not None and previous.state != sample.state:
            what = _what_changed(previous, sample)
            changes.append(f"{sample.at:.3f}: {', '.join(what)} changed")
            first_event = sample.at if first_event is None else first_event
            source = ",".join(sorted(set(sample.sources))) or UNKNOWN_ENV
            rows.append(_row(test, window, trial, source, RowResult.CROSS, "; ".join(what)))
        else:
            rows.append(_row(test, window, trial, CANARY_ENV, RowResult.CLEAN, ""))
        previous = sample
    gaps = coverage_gaps(window, (s.at for s in inside if s.ok), until)
    blind = [
        f"no readable look for {g.seconds:.1f} s ({g.where}, {g.start:.3f} to {g.end:.3f}); "
        f"the tolerance is {tolerance_s:g} s"
        for g in gaps
        if g.seconds > tolerance_s
    ]
    for trial, detail in enumerate([*blind, *faults], start=len(inside)):
        lost += 1
        rows.append(_row(test, window, trial, UNKNOWN_ENV, RowResult.LOST, detail))
    largest = max((g.seconds for g in gaps), default=None)
    verdict = CanaryVerdict(
        window.index, first_event, changes, lost, len(inside), largest, tolerance_s
    )
    return verdict, rows


def last_good_before(samples: Iterable[Sample], t: float) -> Sample | None:
    """The last readable sample taken before ``t``: the baseline for a window starting then."""
    good = [s for s in samples if s.ok and s.at < t]
    return max(good, key=lambda s: s.at) if good else None


def _row(
    test: str, window: Window, trial: int, source: str, result: RowResult, detail: str
) -> IsolationRow:
    return IsolationRow(test, trial, source, CANARY_ENV, result, window.index, detail)
