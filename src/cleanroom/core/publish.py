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
from dataclasses import dataclass, field, replace

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


@dataclass(frozen=True)
class NodeEvidence:
    """One node's share of a run across nodes, as the merged number reads it."""

    node: str
    status: str  # finished, running, lost (died or cut off) or failed (never started)
    rows: list[IsolationRow]
    env_hours: float
    controls: list[ControlResult]
    unfinished: Mapping[int, str]
    proven: Mapping[str, Sequence[str]]


def _control_said(node: NodeEvidence) -> str:
    if not node.controls:
        return f"{node.node} (its positive control has not run)"
    last = node.controls[-1]
    return (
        f"{node.node} (its positive control did not fire: typing {last.typing_cross} of "
        f"{last.typing_trials}, clipboard {last.clipboard_cross} of {last.clipboard_trials})"
    )


def publish_across_nodes(
    nodes: Sequence[NodeEvidence], *, trials_scale: float = 1.0, why_unproven: str = ""
) -> Publication | Refusal:
    """The merged number of a run across nodes, or why it is refused.

    It is published only when every node's latest positive control fired in this run: a
    node whose control did not fire (or never ran) is refused by name, and its hours are
    not counted. Every check counted must have been proven on every node that
    contributes rows of it. Then the one-machine rule (`publish`) runs over every node's
    rows, hours and windows together: a window that failed or was left unfinished on any
    node (a node lost mid-window leaves ``lost`` rows) refuses the number.
    """
    if not nodes:
        return Refusal("no node took part in the run")
    blind = [n for n in nodes if not n.controls or not n.controls[-1].fired]
    if blind:
        hours = sum(n.env_hours for n in blind)
        return Refusal(
            "not every node's positive control fired in this run: "
            f"{'; '.join(map(_control_said, blind))}. "
            f"The merged number is printed only next to every node's fired control; "
            f"{hours:.2f} environment-hours of {', '.join(n.node for n in blind)} are not counted"
        )
    rows = [r for n in nodes for r in n.rows]
    unproven: dict[str, list[str]] = {}
    for test in sorted({r.test for r in rows}):
        for n in nodes:
            if any(r.test == test for r in n.rows) and not n.proven.get(test):
                unproven.setdefault(test, []).append(n.node)
    if unproven:
        why = why_unproven or "none of their leaky or planted controls fired there in this run"
        said = "; ".join(f"{test} on {', '.join(where)}" for test, where in unproven.items())
        return Refusal(
            f"{len(unproven)} check(s) counted in the merged number were not proven on every "
            f"node that contributes rows of them ({said}): {why}"
        )
    unfinished: dict[int, str] = {}
    for n in nodes:
        for window, status in n.unfinished.items():
            unfinished[window] = f"{status} on {n.node}"
    proven = {
        test: [f"{how} on {n.node}" for n in nodes for how in n.proven.get(test, ())]
        for test in {r.test for r in rows}
    }
    lasts = [n.controls[-1] for n in nodes]
    merged_control = ControlResult(
        sum(c.typing_cross for c in lasts),
        sum(c.typing_trials for c in lasts),
        sum(c.clipboard_cross for c in lasts),
        sum(c.clipboard_trials for c in lasts),
    )
    verdict = publish(
        rows,
        sum(n.env_hours for n in nodes),
        [merged_control],
        unfinished,
        proven=proven,
        trials_scale=trials_scale,
    )
    if isinstance(verdict, Refusal):
        return verdict
    text = verdict.text + f"; on {len(nodes)} node(s), each node's positive control fired"
    return replace(verdict, text=text)
