"""The positive control: interference forced inside ONE session, which the detectors must see.

Two Writer instances (two profiles, two documents) run on one display with one D-Bus
session and one clipboard, as one temporary user, and are driven through the same input
path the pool uses (XTest, X selections). The typing half types disjoint alphabets into
both at once and counts runs of foreign letters in the saved documents; the clipboard
half has both sides set the clipboard within 100 ms of each other and counts reads that
return the other side's string. The gate passes only if both counts are above zero.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from cleanroom.core.detectors import clipboard_cross_reads, foreign_letter_runs
from cleanroom.core.publish import NOT_CLAIMED, ControlResult, clipboard_gate
from cleanroom.environments.shared_session import SharedSession, SideClipboard
from cleanroom.lifecycle import wait_until
from cleanroom.store.rundb import RunStore

ALPHABETS = {"a": "abcdefghijklm", "b": "nopqrstuvwxyz"}
# The control's evidence, beside the run database.
CONTROL_EVIDENCE = "control-evidence.json"
# Generous: on a loaded 2-core machine Writer can take well over 10 s to save; a save that
# never comes is a fault of the control run (it raises), never a count of zero.
_SAVE_TIMEOUT_S = 30.0


@dataclass
class ControlEvidence:
    """What the control typed, read and saved, for the run folder and the report."""

    typed: dict[str, str] = field(default_factory=dict)
    saved: dict[str, list[str]] = field(default_factory=dict)
    typing_runs: list[int] = field(default_factory=list)
    clipboard_reads: list[dict[str, str | None]] = field(default_factory=list)
    set_skew_ms: list[float] = field(default_factory=list)
    not_claimed: str = NOT_CLAIMED

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


def _type_side(session: SharedSession, side: str, text: str, start: threading.Barrier) -> None:
    # Each side has its own connection, as two agents would; both go through one display.
    side_input = session.input(side)
    try:
        start.wait()
        side_input.type_into_own_window(text)
    finally:
        side_input.close()


def _save_and_read(session: SharedSession, side: str, before: float) -> str:
    side_input = session.input(side)
    try:
        side_input.save()
    finally:
        side_input.close()
    text = wait_until(lambda: session.saved_text(side, before), _SAVE_TIMEOUT_S, 0.1)
    if text is None:
        raise TimeoutError(f"side {side} did not save its document")
    return text


def typing_half(session: SharedSession, evidence: ControlEvidence, rounds: int, chars: int) -> int:
    """Type both alphabets at once ``rounds`` times; return how many rounds showed a
    foreign-letter run in either saved document."""
    crossed = 0
    seen_runs = 0
    for _ in range(rounds):
        texts = {s: (a * (chars // len(a) + 1))[:chars] for s, a in ALPHABETS.items()}
        start = threading.Barrier(len(texts))
        threads = [
            threading.Thread(target=_type_side, args=(session, s, t, start))
            for s, t in texts.items()
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        before = time.time() - 0.01
        saved = {s: _save_and_read(session, s, before) for s in ALPHABETS}
        runs = foreign_letter_runs(saved["a"], ALPHABETS["b"]) + foreign_letter_runs(
            saved["b"], ALPHABETS["a"]
        )
        for s, text in saved.items():
            evidence.saved.setdefault(s, []).append(text)
            evidence.typed[s] = evidence.typed.get(s, "") + texts[s]
        evidence.typing_runs.append(runs - seen_runs)
        if runs > seen_runs:
            crossed += 1
        seen_runs = runs
    return crossed


def _set_side(
    owner: SideClipboard,
    text: str,
    side: str,
    start: threading.Barrier,
    stamps: dict[str, float],
) -> None:
    start.wait()
    owner.set(text)
    stamps[side] = time.monotonic()


def clipboard_half(
    session: SharedSession, evidence: ControlEvidence, trials: int
) -> tuple[int, int]:
    """Both sides set the clipboard at once, then each reads it. Return how many trials
    had a read that returned the other side's string, and how many trials count: only
    those whose two sets were within `MAX_SET_SKEW_MS` (every skew is in the evidence)."""
    owners = {s: session.clipboard() for s in ALPHABETS}
    crossed: list[bool] = []
    try:
        for trial in range(trials):
            strings = {s: f"control-{s}-{trial}-{secrets.token_hex(4)}" for s in ALPHABETS}
            stamps: dict[str, float] = {}
            start = threading.Barrier(len(owners))

            threads = [
                threading.Thread(target=_set_side, args=(owners[s], strings[s], s, start, stamps))
                for s in owners
            ]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            evidence.set_skew_ms.append(abs(stamps["a"] - stamps["b"]) * 1000)
            reads = {s: session.read_clipboard() for s in owners}
            evidence.clipboard_reads.append(reads)
            cross_here = 0
            for side, got in reads.items():
                others = [v for k, v in strings.items() if k != side]
                cross, _ = clipboard_cross_reads([got], strings[side], others)
                cross_here += cross
            crossed.append(cross_here > 0)
    finally:
        for o in owners.values():
            o.close()
    return clipboard_gate(evidence.set_skew_ms, crossed)


def run_control(
    run_dir: Path, *, typing_rounds: int = 3, chars: int = 40, clipboard_trials: int = 20
) -> tuple[ControlResult, ControlEvidence]:
    """Run both halves in a fresh one-session setup and return the result and evidence."""
    evidence = ControlEvidence()
    with SharedSession(run_dir, tuple(ALPHABETS)) as session:
        typing = typing_half(session, evidence, typing_rounds, chars)
        clip, counted = clipboard_half(session, evidence, clipboard_trials)
    skews = tuple(round(ms, 2) for ms in evidence.set_skew_ms)
    return ControlResult(typing, typing_rounds, clip, counted, skews), evidence


def run_and_store_control(
    store: RunStore, *, typing_rounds: int = 3, chars: int = 40, clipboard_trials: int = 20
) -> ControlResult:
    """Run the control in ``store``'s run and keep it there: the evidence as
    `CONTROL_EVIDENCE` in the run folder, the result (with how long the control took) in
    the database. A control that cannot run raises and stores nothing: it is no result."""
    started = time.monotonic()
    result, evidence = run_control(
        store.run_dir, typing_rounds=typing_rounds, chars=chars, clipboard_trials=clipboard_trials
    )
    (store.run_dir / CONTROL_EVIDENCE).write_text(json.dumps(evidence.to_json(), indent=2))
    store.add_control_result(result, detail=f"{time.monotonic() - started:.1f} s")
    return result
