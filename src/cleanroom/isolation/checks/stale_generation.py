"""Isolation test 10, stale_generation: actions aimed at a generation that was just left.

Four clicks aimed at an environment's current generation are fired at the moment a reset
raises it (released by the pool's generation hook, so they really race the reset), and
one more after the reset returns. Every one must be refused, and the action log must
show none of them applied. A row runs from the environment's old generation to its new
one, so both of its ends name the same environment.

None of the five leaky setups touches generations, so this test detects none of them;
its leaky control is its own fault, `faults.bypass_generation_check`, under which
the pool stops checking generations and this test must report ``cross``.
"""

from __future__ import annotations

import threading
import time
from typing import ClassVar

from cleanroom.core.detectors import stale_generation_row
from cleanroom.core.isolation import IsolationRow, RowResult
from cleanroom.environments.actions import Click
from cleanroom.environments.errors import PoolError, StaleGeneration
from cleanroom.environments.interface import Needs, read_action_log
from cleanroom.environments.leaky_setups import Leak
from cleanroom.isolation.battery import IsolationCheck, Schedule, TrialContext
from cleanroom.isolation.fault import Fault

NAME = "stale_generation"
RACING_CLICKS = 4
# How long a racing click waits for the reset to raise the generation before giving up.
_RELEASE_TIMEOUT_S = 30.0


class StaleGenerationCheck(IsolationCheck):
    """Old-generation clicks racing a reset, then one more after it: none may apply."""

    name: ClassVar[str] = NAME
    number: ClassVar[int] = 10
    schedule: ClassVar[Schedule] = Schedule(window=20, soak=100)
    detects: ClassVar[tuple[Leak, ...]] = ()
    # Everything it does goes through the interface: any provider runs it.
    requires: ClassVar[Needs] = Needs()
    faults: ClassVar[tuple[Fault, ...]] = (Fault.GENERATION_CHECK_BYPASSED,)

    def pairs(self, ctx: TrialContext) -> list[tuple[str, str]]:
        """From each acting environment's old generation to its new one."""
        return [(env, env) for env in ctx.acting_envs]

    def run_trial(self, ctx: TrialContext, trial: int) -> list[IsolationRow]:
        """Race four stale clicks against a reset of one environment, then fire a fifth."""
        envs = ctx.acting_envs
        env = envs[trial % len(envs)]
        pool = ctx.pool
        screen = pool.screen_size(env)
        # The bottom-right corner: a status bar or empty desktop, harmless if it lands.
        click = Click("click", screen.width - 4, screen.height - 4)
        old = pool.generation(env)
        began = time.time()

        released = threading.Event()
        left_at: list[float] = []
        outcomes: list[str] = ["not fired"] * RACING_CLICKS
        fired_at: list[float] = [0.0] * RACING_CLICKS

        def on_generation(name: str, generation: int, why: str) -> None:
            if name == env and not released.is_set():
                left_at.append(time.time())
                released.set()

        def fire(i: int) -> None:
            if not released.wait(_RELEASE_TIMEOUT_S):
                return
            fired_at[i] = time.time()
            outcomes[i] = _click(ctx, env, old, click)

        racers = [
            threading.Thread(target=fire, args=(i,), name=f"stale-click-{i}", daemon=True)
            for i in range(RACING_CLICKS)
        ]
        for t in racers:
            t.start()
        pool.on_generation.append(on_generation)
        try:
            new = pool.reset(env, old, why=f"{NAME} trial {trial}")
        finally:
            pool.on_generation.remove(on_generation)
            released.set()  # never leave a racer waiting, whatever happened
            for t in racers:
                t.join(timeout=_RELEASE_TIMEOUT_S)
        after = _click(ctx, env, old, click)
        all_outcomes = [*outcomes, after]

        records = [r for r in read_action_log(pool.action_log) if r.at >= began]
        ctx.write_evidence(
            NAME,
            trial,
            "stale-clicks.json",
            {
                "env": env,
                "old_generation": old,
                "new_generation": new,
                "generation_left_at": left_at[0] if left_at else None,
                "racing_fired_at": fired_at,
                "racing_spread_ms": _spread_ms(fired_at),
                "outcomes": all_outcomes,
                "log": [r.to_json() for r in records if r.env == env],
            },
        )
        if not left_at or "not fired" in outcomes:
            return [
                IsolationRow(
                    NAME, trial, env, env, RowResult.LOST, ctx.window, "racing clicks never fired"
                )
            ]
        refused = sum(1 for o in all_outcomes if o == "refused")
        return [
            stale_generation_row(
                NAME,
                trial,
                ctx.window,
                env,
                fired=len(all_outcomes),
                refused=refused,
                records=records,
                generation=old,
                kind=click.kind,
                left_at=left_at[0],
            )
        ]


def _click(ctx: TrialContext, env: str, generation: int, click: Click) -> str:
    """``refused`` if the pool refused the stale click, ``applied`` or the failure if not."""
    try:
        ctx.pool.act(env, generation, click)
    except StaleGeneration:
        return "refused"
    except PoolError as exc:  # it passed the generation check and then failed: not refused
        return f"failed: {exc}"
    return "applied"


def _spread_ms(times: list[float]) -> float | None:
    fired = [t for t in times if t]
    return (max(fired) - min(fired)) * 1000 if fired else None
