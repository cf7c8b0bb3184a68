"""Isolation test 9, reset_during_write: a reset in the middle of a save leaves nothing.

One environment sets its clipboard to a token, types another token into its open Writer
document and saves; 200 ms after the save keystroke the harness resets it. 50 ms after
the reset returns, its tree and clipboard are searched, then every other environment's:
no token of the old generation may remain anywhere. Found in the reset environment, it
crossed from the old generation to the new one (that row names the environment at both
ends and says so in its detail); found in another environment, it crossed to it.

Leaks it must catch: ``shared-clipboard`` (the bridge keeps serving the old
generation's clipboard to the other display after the reset cleared its own).
"""

from __future__ import annotations

import time
from typing import ClassVar

from cleanroom.core.detectors import leftover_rows, unless_seen
from cleanroom.core.isolation import IsolationRow
from cleanroom.core.tokens import TokenHit
from cleanroom.environments.errors import PoolError
from cleanroom.environments.leaky_setups import Leak
from cleanroom.environments.policy.handle import LocalHandle
from cleanroom.isolation.battery import IsolationCheck, Schedule, TrialContext
from cleanroom.isolation.checks.holdings import holdings

NAME = "reset_during_write"
RESET_AFTER_SAVE_S = 0.2
CHECK_AFTER_RESET_S = 0.05


class ResetDuringWriteCheck(IsolationCheck):
    """Clipboard, typing and a save cut short by a reset: nothing of them may survive."""

    name: ClassVar[str] = NAME
    number: ClassVar[int] = 9
    schedule: ClassVar[Schedule] = Schedule(window=20, soak=20, on_demand=True)
    detects: ClassVar[tuple[Leak, ...]] = (Leak.SHARED_CLIPBOARD,)
    needs: ClassVar[tuple[str, ...]] = ("writer",)

    def pairs(self, ctx: TrialContext) -> list[tuple[str, str]]:
        """From each acting environment to itself (old to new generation) and to every
        other environment, the canary included."""
        return [(a, b) for a in ctx.acting_envs for b in ctx.pool.names]

    def run_trial(self, ctx: TrialContext, trial: int) -> list[IsolationRow]:
        """Write, save, reset 200 ms later, and search every environment 50 ms after."""
        pool = ctx.pool
        env = ctx.acting_envs[trial % len(ctx.acting_envs)]
        clip, typed = ctx.mint(env), ctx.mint(env)
        handle = LocalHandle(pool, env)
        old = handle.generation

        handle.focus(program="writer")
        handle.set_clipboard(f"copied {clip}", ("CLIPBOARD", "PRIMARY"))
        held = handle.get_clipboard("CLIPBOARD")
        handle.type_text(f" typed {typed} ")
        handle.hotkey("ctrl+s")
        saved = time.monotonic()
        time.sleep(max(0.0, RESET_AFTER_SAVE_S - (time.monotonic() - saved)))
        reset_at = time.monotonic()
        new = pool.reset(env, old, why=f"{NAME} trial {trial}")
        returned = time.monotonic()
        time.sleep(CHECK_AFTER_RESET_S)

        found: dict[str, list[TokenHit] | str] = {}
        searched: dict[str, list[str] | str] = {}
        # The reset environment first, at 50 ms; then the others.
        for name in [env, *(n for n in pool.names if n != env)]:
            try:
                h = holdings(pool, name)
            except PoolError as exc:
                found[name] = searched[name] = f"unreadable: {exc}"
                continue
            found[name], searched[name] = h.hits, h.searched
        checked = time.monotonic()

        tokens = [str(clip), str(typed)]
        ctx.write_evidence(
            NAME,
            trial,
            "reset.json",
            {
                "env": env,
                "tokens": tokens,
                "clipboard_before_reset": held,
                "generation_before": old,
                "generation_after": new,
                "reset_after_save_ms": (reset_at - saved) * 1000,
                "reset_took_ms": (returned - reset_at) * 1000,
                "checked_after_reset_ms": (checked - returned) * 1000,
                "searched": searched,
                "hits": {
                    n: [(str(x.token), x.source) for x in hits if str(x.token) in tokens]
                    for n, hits in found.items()
                    if not isinstance(hits, str)
                },
            },
        )
        rows = leftover_rows(NAME, trial, ctx.window, env, tokens, found)
        return unless_seen(rows, clipboard_missing(env, held, str(clip)))


def clipboard_missing(env: str, held: str | None, token: str) -> str | None:
    """What was missing of the trial's own signal: its clipboard token read back before
    the reset (None: it was there). Without it, nothing found afterwards means anything."""
    if held is not None and token in held:
        return None
    return f"{env}'s clipboard did not hold its own token before the reset: {held!r}"[:500]
