"""Test 4, modifier_leak: one environment holds Shift, then Ctrl, while another types a
lowercase word; the saved documents are read from the host. Capitals mean Shift leaked;
a word found nowhere means Ctrl leaked (Writer took the letters as shortcuts), but only
if a check string of digits the typist types after the hold did land: otherwise the
typist's own keys went nowhere (a loaded or broken environment), which proves nothing
and is lost. Which environment holds and which types rotates from trial to trial."""

from __future__ import annotations

import secrets
import time
from typing import ClassVar

from cleanroom.core.detectors import ModifierEffect, modifier_effect
from cleanroom.core.isolation import IsolationRow, RowResult
from cleanroom.environments.leaky_setups import Leak
from cleanroom.environments.policy.handle import LocalHandle
from cleanroom.isolation.battery import IsolationCheck, Schedule, TrialContext
from cleanroom.isolation.checks.writer_steps import (
    clear_document,
    document_path,
    modified_ns,
    read_now,
    read_saved,
)

HOLD_S = 5.0
MODIFIERS = ("shift", "ctrl")
# Letters whose Ctrl shortcuts in Writer only toggle formatting or alignment, so a Ctrl
# leak loses the text without closing, printing or opening anything.
SAFE_LETTERS = "bijlerud"
WORD_LEN = 16
CHECK_LEN = 8  # digits: they share no run with the word, so they never blur its verdict


def rotation(envs: list[str], trial: int) -> tuple[str, str]:
    """Which environment holds the modifier and which types, in trial ``trial``."""
    if len(envs) < 2:
        raise ValueError("modifier_leak needs two acting environments")
    return envs[trial % len(envs)], envs[(trial + 1) % len(envs)]


def phase_rows(
    test: str,
    trial: int,
    window: int,
    modifier: str,
    holder: str,
    typist: str,
    effects: dict[str, ModifierEffect | None],
    keys_landed: bool = True,
) -> list[IsolationRow]:
    """Rows for one phase from where the typed word showed up in each saved document.

    ``effects`` maps every acting environment to what its document shows (None: the
    typist's document was not saved, so nothing it shows can be trusted).
    ``keys_landed`` says whether the check typed after the hold reached the typist's
    document: a missing word is a Ctrl leak only when the typist could type at all.
    """

    def row(src: str, dst: str, result: RowResult, detail: str = "") -> IsolationRow:
        return IsolationRow(test, trial, src, dst, result, window, f"{modifier}: {detail}")

    shifted = [
        e for e, f in effects.items() if f in (ModifierEffect.SHIFTED, ModifierEffect.PARTIAL)
    ]
    elsewhere = [e for e, f in effects.items() if e != typist and f is ModifierEffect.EXACT]
    rows = [row(typist, e, RowResult.CROSS, f"the word typed in {typist} landed here")
            for e in elsewhere]  # fmt: skip
    if shifted:
        rows.append(row(holder, typist, RowResult.CROSS, f"Shift leaked: capitals in {shifted}"))
    elif effects.get(typist) is None and not elsewhere:
        rows.append(row(holder, typist, RowResult.LOST, "the typist's document was not saved"))
    elif effects.get(typist) is ModifierEffect.EXACT:
        rows.append(row(holder, typist, RowResult.CLEAN))
    elif not elsewhere and modifier == "ctrl" and keys_landed:
        rows.append(row(holder, typist, RowResult.CROSS, "Ctrl leaked: the word is nowhere"))
    elif not elsewhere and modifier == "ctrl":
        rows.append(
            row(holder, typist, RowResult.LOST, "the typist's keys landed nowhere, check included")
        )
    elif not elsewhere:
        rows.append(row(holder, typist, RowResult.LOST, "the word is nowhere, with Shift held"))
    return rows


class ModifierLeakCheck(IsolationCheck):
    """A held modifier in one environment must not change what another types."""

    name: ClassVar[str] = "modifier_leak"
    number: ClassVar[int] = 4
    schedule: ClassVar[Schedule] = Schedule(window=3, soak=3)
    detects: ClassVar[tuple[Leak, ...]] = (Leak.SHARED_DISPLAY,)
    needs: ClassVar[tuple[str, ...]] = ("writer",)

    def __init__(self, hold_s: float = HOLD_S) -> None:
        self.hold_s = hold_s

    def run_trial(self, ctx: TrialContext, trial: int) -> list[IsolationRow]:
        """Shift phase, then Ctrl phase, each with a fresh word."""
        envs = ctx.acting_envs
        holder, typist = rotation(envs, trial)
        rows: list[IsolationRow] = []
        evidence = {}
        for modifier in MODIFIERS:
            got, ev = self._phase(ctx, trial, modifier, holder, typist)
            rows.extend(got)
            evidence[modifier] = ev
        ctx.write_evidence(self.name, trial, "modifiers.json", evidence)
        return rows

    def _phase(
        self, ctx: TrialContext, trial: int, modifier: str, holder: str, typist: str
    ) -> tuple[list[IsolationRow], dict[str, object]]:
        envs = ctx.acting_envs
        hold, typ = LocalHandle(ctx.pool, holder), LocalHandle(ctx.pool, typist)
        paths = {e: document_path(ctx.pool, e) for e in envs}
        word = "".join(secrets.choice(SAFE_LETTERS) for _ in range(WORD_LEN))
        check = "".join(secrets.choice("0123456789") for _ in range(CHECK_LEN))
        clear_document(typ)
        time.sleep(0.3)
        before = {e: modified_ns(p) for e, p in paths.items()}
        hold.key_down(modifier)
        held_at = time.monotonic()
        try:
            time.sleep(0.3)
            typ.type_text(word)
            typed_at = time.time()
            time.sleep(max(0.0, held_at + self.hold_s - time.monotonic()))
        finally:
            hold.key_up(modifier)
            _release_everything(ctx, holder)
        time.sleep(0.3)
        typ.type_text(" " + check)  # with nothing held: proof the typist's keys land
        typ.hotkey("ctrl+s")
        saved = read_saved(paths[typist], before[typist])
        texts: dict[str, str | None] = {typist: saved}
        for e in envs:
            if e != typist:
                # Another document changes only if the typing reached it and it was saved.
                texts[e] = read_now(paths[e]) if modified_ns(paths[e]) > before[e] else ""
        effects = {e: modifier_effect(word, t) if t is not None else None for e, t in texts.items()}
        if saved is None:
            effects[typist] = None
        keys_landed = saved is not None and check in saved
        rows = phase_rows(
            self.name, trial, ctx.window, modifier, holder, typist, effects, keys_landed
        )
        evidence = {
            "holder": holder,
            "typist": typist,
            "word": word,
            "check": check,
            "keys_landed": keys_landed,
            "typed_at": typed_at,
            "hold_s": self.hold_s,
            "saved_texts": texts,
            "effects": {e: (f.value if f else None) for e, f in effects.items()},
        }
        return rows, evidence


def _release_everything(ctx: TrialContext, env: str) -> None:
    # Whatever happens in the phase, no key may stay down for the next test.
    ctx.pool.release_keys(env)
