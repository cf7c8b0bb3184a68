"""The published-number rule: no zero is printed without a positive control that fired.

Contamination events over environment-hours are printed as ``E of X`` next to the
positive control's ``Y of N`` with Y above zero. If the latest control did not fire, if
any window failed (lost rows, a canary event) or was interrupted before its checks
ended, if any check counted in the number was not proven in the same run (none of its
leaky or planted controls fired), or if nothing was measured, the number is refused with
the reason. A run at reduced trial counts says so in the number itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from cleanroom.core.isolation import IsolationRow, RowResult, judge_windows, trials_per_test

NOT_CLAIMED = (
    "The positive control shows only that the typing and clipboard detectors can fire with "
    "interference forced inside one session; it does not show that a leak between sessions "
    "or through another channel would be caught."
)
# What no run claims, whatever it measured.
LIMITS = (
    NOT_CLAIMED,
    "A check's leaky or planted control shows that it fired on the one leak wired in for "
    "it in this run; a leak by another route may pass it unseen.",
    "A detector's unit test with a leak wired in shows that the detector reads its inputs "
    "and fires on them, not that a real leak would leave its trace in those inputs.",
    "The kernel, the CPU and memory are shared between environments: timing, cache and load "
    "side channels and kernel bugs are outside every check.",
)


def not_claimed(
    checks: Iterable[str], proven: Mapping[str, Sequence[str]], trials_scale: float = 1.0
) -> list[str]:
    """Everything a run's number does not claim: the fixed limits, reduced trial counts,
    and for each check whether and how it was proven in this run."""
    lines = list(LIMITS)
    if trials_scale != 1:
        lines.append(
            f"The windows ran {trials_scale:g}x the planned trials of each check: a leak "
            "rarer than the planned counts would catch may have been missed."
        )
    for check in sorted(set(checks)):
        how = proven.get(check)
        lines.append(
            f"{check}: proven in this run by {', '.join(how)}"
            if how
            else f"{check}: not proven in this run, so nothing is claimed for it"
        )
    return lines


# The clipboard half tests two sets of one clipboard within this many milliseconds of each
# other; a trial whose sets were further apart tests something slower and is not counted.
MAX_SET_SKEW_MS = 100.0


@dataclass(frozen=True)
class ControlResult:
    """One run of the positive control: both halves must see cross-delivery.

    ``clipboard_trials`` counts only the clipboard trials whose two sets were at most
    `MAX_SET_SKEW_MS` apart; ``clipboard_skew_ms`` holds every trial's skew, those not
    counted included.
    """

    typing_cross: int
    typing_trials: int
    clipboard_cross: int
    clipboard_trials: int
    clipboard_skew_ms: tuple[float, ...] = ()

    @property
    def fired(self) -> bool:
        return self.typing_cross > 0 and self.clipboard_cross > 0

    @property
    def cross(self) -> int:
        return self.typing_cross + self.clipboard_cross

    @property
    def trials(self) -> int:
        return self.typing_trials + self.clipboard_trials


def clipboard_gate(skews_ms: Sequence[float], crossed: Sequence[bool]) -> tuple[int, int]:
    """The clipboard half's count: ``(trials that cross-read, trials counted)`` over the
    trials whose two sets were at most `MAX_SET_SKEW_MS` apart."""
    if len(skews_ms) != len(crossed):
        raise ValueError("one skew per clipboard trial")
    counted = [c for ms, c in zip(skews_ms, crossed, strict=True) if ms <= MAX_SET_SKEW_MS]
    return sum(counted), len(counted)


def skew_summary(skews_ms: Sequence[float]) -> str:
    """The distribution of the clipboard half's set skews, in one line."""
    if not skews_ms:
        return "no clipboard trials"
    ordered = sorted(skews_ms)

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    over = sum(1 for ms in ordered if ms > MAX_SET_SKEW_MS)
    return (
        f"set skew min {ordered[0]:.1f} ms, median {at(0.5):.1f} ms, p95 {at(0.95):.1f} ms, "
        f"max {ordered[-1]:.1f} ms; {over} of {len(ordered)} over {MAX_SET_SKEW_MS:g} ms "
        "(not counted)"
    )


@dataclass(frozen=True)
class Publication:
    """A number that may be printed, with everything that must be printed beside it."""

    events: int
    env_hours: float
    control: ControlResult
    checks: dict[str, int]
    text: str
    not_claimed: str = NOT_CLAIMED
    # For each counted check, the leaky or planted controls that fired in this run.
    proven: dict[str, list[str]] = field(default_factory=dict)
    trials_scale: float = 1.0


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
    *,
    proven: Mapping[str, Sequence[str]],
    trials_scale: float = 1.0,
    why_unproven: str = "",
) -> Publication | Refusal:
    """Decide what the report may say about isolation, or refuse with the reason.

    ``unfinished`` maps windows that never reached their end (an interrupted run) to
    their status: their audit and canary verdict may be missing, so they refuse too.
    ``proven`` maps each check to the leaky or planted controls that fired for it in this
    run; every check with rows in the number must have one. ``why_unproven`` says why
    checks may lack one (the controls were not run). ``trials_scale`` below 1 is printed
    in the number line.
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
    checks = trials_per_test(rows)
    unproven = sorted(test for test in checks if not proven.get(test))
    if unproven:
        why = why_unproven or "none of their leaky or planted controls fired in this run"
        return Refusal(
            f"{len(unproven)} of the {len(checks)} checks counted in the number were not "
            f"proven in this run ({', '.join(unproven)}): {why}"
        )
    control = last
    events = sum(1 for r in rows if r.result is RowResult.CROSS)
    scale = f" at {trials_scale:g}x the planned trials" if trials_scale != 1 else ""
    text = (
        f"{events} of {env_hours:.2f} environment-hours{scale}: {events} contamination "
        f"event(s) in {env_hours:.2f} environment-hours across {len(rows)} isolation rows "
        f"of {len(checks)} checks, each proven in this run; "
        f"positive control {control.cross} of {control.trials} trials cross-delivered "
        f"(typing {control.typing_cross} of {control.typing_trials}, clipboard "
        f"{control.clipboard_cross} of {control.clipboard_trials})"
    )
    return Publication(
        events,
        env_hours,
        control,
        checks,
        text,
        proven={test: list(proven[test]) for test in checks},
        trials_scale=trials_scale,
    )
