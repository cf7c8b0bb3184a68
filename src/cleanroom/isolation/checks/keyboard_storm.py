"""Test 3, keyboard_storm: every environment types ten distinct tokens within a few
seconds into its open Writer document and saves it; the saved files are read from the
host and scanned for tokens. A token of another environment in a document is cross."""

from __future__ import annotations

import time
from dataclasses import replace
from functools import partial
from typing import ClassVar

from cleanroom.core.detectors import BLIND, Delivery, delivery_rows, interleaved_senders
from cleanroom.core.isolation import IsolationRow, RowResult
from cleanroom.core.tokens import Token, scan_text
from cleanroom.environments.leaky_setups import Leak
from cleanroom.environments.policy.handle import LocalHandle, PolicyHandle
from cleanroom.isolation.battery import IsolationCheck, Schedule, TrialContext
from cleanroom.isolation.checks.together import at_once
from cleanroom.isolation.checks.writer_steps import (
    clear_document,
    document_path,
    modified_ns,
    read_saved,
)

TOKENS_PER_ENV = 10
SPAN_S = 5.0


def _storm(handle: PolicyHandle, tokens: list[Token], span_s: float) -> list[float]:
    """Type each token (and a space) on a schedule that spreads them over ``span_s``."""
    start = time.monotonic()
    stamps = []
    for i, token in enumerate(tokens):
        due = start + i * span_s / len(tokens)
        time.sleep(max(0.0, due - time.monotonic()))
        handle.type_text(f"{token} ")
        stamps.append(time.time())
    return stamps


class KeyboardStormCheck(IsolationCheck):
    """Everyone types at once; each saved document must hold only its own tokens."""

    name: ClassVar[str] = "keyboard_storm"
    number: ClassVar[int] = 3
    schedule: ClassVar[Schedule] = Schedule(window=10, soak=10)
    detects: ClassVar[tuple[Leak, ...]] = (Leak.SHARED_DISPLAY, Leak.SHARED_HOME)
    needs: ClassVar[tuple[str, ...]] = ("writer",)

    def __init__(self, tokens: int = TOKENS_PER_ENV, span_s: float = SPAN_S) -> None:
        self.tokens = tokens
        self.span_s = span_s

    def run_trial(self, ctx: TrialContext, trial: int) -> list[IsolationRow]:
        """Clear, storm, save, read every saved document from the host."""
        envs = ctx.acting_envs
        handles = {e: LocalHandle(ctx.pool, e) for e in envs}
        paths = {e: document_path(ctx.pool, e) for e in envs}
        tokens = {e: [ctx.mint(e) for _ in range(self.tokens)] for e in envs}
        cleared = at_once({e: partial(clear_document, handles[e]) for e in envs})
        time.sleep(0.3)
        before = {e: modified_ns(p) for e, p in paths.items()}
        typed = at_once({e: partial(_storm, handles[e], tokens[e], self.span_s) for e in envs})
        time.sleep(0.3)  # Writer takes the last keys before the save shortcut
        saved = at_once({e: partial(handles[e].hotkey, "ctrl+s") for e in envs})
        texts = {e: read_saved(paths[e], before[e]) for e in envs}
        deliveries, hits, evidence = [], {}, {}
        for e in envs:
            problem = next(
                (f"{step} failed: {o.error}" for step, o in
                 (("clear", cleared[e]), ("type", typed[e]), ("save", saved[e])) if not o.ok),
                "",
            )  # fmt: skip
            text = texts[e]
            if text is None and not problem:
                problem = "no save of the document arrived"
            found = scan_text(text, str(paths[e])) if text is not None else []
            hits[e] = found
            # An unsaved document is unreadable (lost); a saved one is judged on the
            # tokens it holds, whatever went wrong on the way.
            expected = " ".join(map(str, tokens[e]))
            deliveries.append(Delivery(e, expected, text))
            own = {str(t) for t in tokens[e]}
            evidence[e] = {
                "typed": sorted(own),
                "typed_at": typed[e].value,
                "document": str(paths[e]),
                "saved_text": text,
                "own_tokens_found": len({str(h.token) for h in found} & own),
                "foreign_tokens": sorted({h.token for h in found if h.env != e}),
                "problem": problem,
            }
        # Keystrokes mixed character by character break every token apart; what is left
        # of a document once its own text is taken out names the sender too.
        typed_text = {e: " ".join(map(str, tokens[e])) for e in envs}
        mixed = {
            e: interleaved_senders(
                texts[e] or "", typed_text[e], {x: typed_text[x] for x in envs if x != e}
            )
            for e in envs
            if texts[e] is not None
        }
        for e, senders in mixed.items():
            evidence[e]["interleaved_from"] = senders
        ctx.write_evidence(self.name, trial, "storm.json", evidence)
        rows = delivery_rows(self.name, trial, ctx.window, deliveries, hits)
        return [
            replace(r, result=RowResult.CROSS, detail="keystrokes of the sender mixed in")
            if (r.result is RowResult.CLEAN or r.detail == BLIND)
            and r.from_env in mixed.get(r.to_env, [])
            else r
            for r in rows
        ]
