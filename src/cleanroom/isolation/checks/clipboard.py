"""Test 2, clipboard: every environment sets a tagged clipboard string at one moment,
then reads both selections back; a read holding another environment's token is cross."""

from __future__ import annotations

import time
from functools import partial
from typing import ClassVar

from cleanroom.core.detectors import Delivery, delivery_rows
from cleanroom.core.isolation import IsolationRow
from cleanroom.core.tokens import scan_text
from cleanroom.environments.interface import SELECTIONS, Needs
from cleanroom.environments.leaky_setups import Leak
from cleanroom.environments.policy.handle import LocalHandle, PolicyHandle
from cleanroom.isolation.battery import IsolationCheck, Schedule, TrialContext
from cleanroom.isolation.checks.together import at_once

# Time for anything that copies selections between displays to act before the read.
SETTLE_S = 0.5


def _read_both(handle: PolicyHandle) -> dict[str, str | None]:
    return {s: handle.get_clipboard(s) for s in SELECTIONS}


class ClipboardCheck(IsolationCheck):
    """All environments own CLIPBOARD and PRIMARY at once; each must read back its own."""

    name: ClassVar[str] = "clipboard"
    number: ClassVar[int] = 2
    schedule: ClassVar[Schedule] = Schedule(window=50, soak=10)
    detects: ClassVar[tuple[Leak, ...]] = (Leak.SHARED_CLIPBOARD, Leak.SHARED_DISPLAY)
    requires: ClassVar[Needs] = Needs()  # selections only: any provider

    def __init__(self, settle_s: float = SETTLE_S) -> None:
        self.settle_s = settle_s

    def run_trial(self, ctx: TrialContext, trial: int) -> list[IsolationRow]:
        """Set at one moment, wait, read back; rows from the tokens each read holds."""
        envs = ctx.acting_envs
        handles = {e: LocalHandle(ctx.pool, e) for e in envs}
        texts = {e: f"clipboard {ctx.mint(e)}" for e in envs}
        set_out = at_once(
            {e: partial(handles[e].set_clipboard, texts[e], SELECTIONS) for e in envs}
        )
        time.sleep(self.settle_s)
        read_out = at_once({e: partial(_read_both, handles[e]) for e in envs})
        deliveries, hits, evidence = [], {}, {}
        for e in envs:
            s, r = set_out[e], read_out[e]
            observed: str | None = None
            why = ""
            if not s.ok:
                why = f"set failed: {s.error}"
            elif not r.ok or r.value is None:
                why = f"read failed: {r.error}"
            else:
                joined = "\n".join(v or "" for v in r.value.values())
                found = scan_text(joined, f"{e}:clipboard")
                if found:
                    observed, hits[e] = joined, found
                else:
                    why = "neither selection held any token, not even our own"
            deliveries.append(Delivery(e, texts[e], observed))
            evidence[e] = {
                "set": texts[e],
                "set_at": s.released_at,
                "read": r.value if r.ok else None,
                "problem": why,
            }
        ctx.write_evidence(self.name, trial, "clipboard.json", evidence)
        return delivery_rows(self.name, trial, ctx.window, deliveries, hits)
