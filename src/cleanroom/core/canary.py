"""The canary's rule: `env00` never receives an action, so any change in it is a leak.

A watcher samples the canary every few seconds (the focused text through AT-SPI, the
window list, a hash of the clipboard). Within a window, a sample that differs from the
one before it is a contamination event; the flag is sticky, so every rollout of that
window that ends after the first event is invalid (``isolation``). A sample that could
not be read is ``lost`` and fails the window.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from cleanroom.core.isolation import CANARY_TEST as CANARY_TEST  # re-exported
from cleanroom.core.isolation import IsolationRow, RowResult, Window

CANARY_ENV = "env00"
UNKNOWN_ENV = "unknown"


@dataclass(frozen=True)
class CanarySample:
    """One look at the canary: hashes of what it showed, or why it could not be read.

    ``sources`` names the environments whose tokens appeared in what was read, so a
    change can be attributed when the leaked text carries a token.
    """

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


def digest(data: str | bytes | None) -> str | None:
    """The SHA-256 a sample stores in place of what it read (None stays None)."""
    if data is None:
        return None
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    return hashlib.sha256(raw).hexdigest()


@dataclass(frozen=True)
class CanaryVerdict:
    """What the canary saw in one window."""

    window: int
    first_event_at: float | None
    changes: list[str]
    lost: int
    samples: int

    @property
    def flagged(self) -> bool:
        return self.first_event_at is not None


def _what_changed(before: CanarySample, after: CanarySample) -> list[str]:
    names = ("focused text", "window list", "clipboard")
    return [n for n, a, b in zip(names, before.state, after.state, strict=True) if a != b]


def judge_canary(
    window: Window, samples: Sequence[CanarySample], baseline: CanarySample | None = None
) -> tuple[CanaryVerdict, list[IsolationRow]]:
    """Judge one window's samples against the last good state before it.

    Returns the verdict and one isolation row per sample inside the window: ``cross`` for
    a sample whose state differs from the previous good one, ``lost`` for an unreadable
    sample, ``clean`` otherwise. The baseline is the last readable sample before the
    window; without one, the window's first readable sample is the baseline.
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
            rows.append(_row(window, trial, UNKNOWN_ENV, RowResult.LOST, sample.detail))
            continue
        if previous is not None and previous.state != sample.state:
            what = _what_changed(previous, sample)
            changes.append(f"{sample.at:.3f}: {', '.join(what)} changed")
            first_event = sample.at if first_event is None else first_event
            source = ",".join(sorted(set(sample.sources))) or UNKNOWN_ENV
            rows.append(_row(window, trial, source, RowResult.CROSS, "; ".join(what)))
        else:
            rows.append(_row(window, trial, CANARY_ENV, RowResult.CLEAN, ""))
        previous = sample
    verdict = CanaryVerdict(window.index, first_event, changes, lost, len(inside))
    return verdict, rows


def last_good_before(samples: Iterable[CanarySample], t: float) -> CanarySample | None:
    """The last readable sample taken before ``t``: the baseline for a window starting then."""
    good = [s for s in samples if s.ok and s.at < t]
    return max(good, key=lambda s: s.at) if good else None


def _row(window: Window, trial: int, source: str, result: RowResult, detail: str) -> IsolationRow:
    return IsolationRow(CANARY_TEST, trial, source, CANARY_ENV, result, window.index, detail)
