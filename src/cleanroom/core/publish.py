"""The published-number rule: no zero is printed without a positive control that fired.

Contamination events over environment-hours are printed as ``E of X`` next to the
positive control's ``Y of N`` with Y above zero. If the control did not fire, if any
window failed (lost rows, a canary event) or was interrupted before its checks ended, or
if nothing was measured, the number is refused with the reason.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from cleanroom.core.isolation import IsolationRow, RowResult, judge_windows, trials_per_test

NOT_CLAIMED = (
    "The positive control shows only that the typing and clipboard detectors can fire with "
    "interference forced inside one session; it does not show that a leak between sessions "
    "or through another channel would be caught."
)


@dataclass(frozen=True)
class ControlResult:
    """One run of the positive control: both halves must see cross-delivery."""

    typing_cross: int
    typing_trials: int
    clipboard_cross: int
    clipboard_trials: int

    @property
    def fired(self) -> bool:
        return self.typing_cross > 0 and self.clipboard_cross > 0

    @property
    def cross(self) -> int:
        return self.typing_cross + self.clipboard_cross

    @property
    def trials(self) -> int:
        return self.typing_trials + self.clipboard_trials


@dataclass(frozen=True)
class Publication:
    """A number that may be printed, with everything that must be printed beside it."""

    events: int
    env_hours: float
    control: ControlResult
    checks: dict[str, int]
    text: str
    not_claimed: str = NOT_CLAIMED


@dataclass(frozen=True)
class Refusal:
    """Why no number is printed."""

    reason: str
    failed_windows: list[int] = field(default_factory=list)


def publish(
    rows: Iterable[IsolationRow],
    env_hours: float,
    controls: Iterable[ControlResult],
    unfinished: Mapping[int, str] | None = None,
) -> Publication | Refusal:
    """Decide what the report may say about isolation, or refuse with the reason.

    ``unfinished`` maps windows that never reached their end (an interrupted run) to
    their status: their audit and canary verdict may be missing, so they refuse too.
    """
    rows = list(rows)
    controls = list(controls)
    if not controls:
        return Refusal("the positive control has not run, so a zero would say nothing")
    # The latest control decides: one that fired earlier says nothing about detectors
    # that a later control found blind.
    last = controls[-1]
    if not last.fired:
        earlier = sum(1 for c in controls[:-1] if c.fired)
        since = f" (although {earlier} earlier run(s) of it fired)" if earlier else ""
        return Refusal(
            "the positive control did not fire (typing "
            f"{last.typing_cross} of {last.typing_trials}, clipboard "
            f"{last.clipboard_cross} of {last.clipboard_trials}){since}: the detectors are "
            "not shown to see a leak, so no number is printed"
        )
    failures = {v.window: v.failure for v in judge_windows(rows) if v.failure}
    for window, status in (unfinished or {}).items():
        ended = f"the window was {status} before its checks ended"
        failures[window] = f"{failures[window]}; {ended}" if window in failures else ended
    if failures:
        why = "; ".join(f"window {w}: {failures[w]}" for w in sorted(failures))
        return Refusal(f"failed windows refuse the number ({why})", sorted(failures))
    if not rows:
        return Refusal("no isolation rows were recorded")
    if not env_hours > 0:
        return Refusal("no environment-hours were observed")
    control = last
    events = sum(1 for r in rows if r.result is RowResult.CROSS)
    checks = trials_per_test(rows)
    text = (
        f"{events} of {env_hours:.2f} environment-hours: {events} contamination event(s) "
        f"in {env_hours:.2f} environment-hours across {len(rows)} isolation rows; "
        f"positive control {control.cross} of {control.trials} trials cross-delivered "
        f"(typing {control.typing_cross} of {control.typing_trials}, clipboard "
        f"{control.clipboard_cross} of {control.clipboard_trials})"
    )
    return Publication(events, env_hours, control, checks, text)
