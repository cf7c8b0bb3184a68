"""Isolation test 11, crash_blast_radius: one environment crashes; the others must not notice.

Everything running as one environment's Unix user (its programs, its session bus, and
any agent process it runs) is killed at once. The pool's watchdog, run by the trial,
must bring it back at a new generation within `back_within_s`. Meanwhile every other
environment, the canary included, is screenshotted through the pool in a loop and each
screenshot is timed (latency samples with phases ``before``, ``during`` and ``after``).

Verdict, one row from the crashed environment to each bystander: ``cross`` if the
bystander's programs died or were replaced, its generation changed, a screenshot of it
failed, or one took longer than `latency_bound_ms` while the crashed environment was
down; ``lost`` if the crashed environment did not come back in time (the check did not
reach its end, and a lost row fails the window, so a crash that is never recovered is
never a pass); ``clean`` otherwise.

Leaks it must catch: ``shared-display`` (the crashed environment's display is rebuilt
under the other's programs), and ``shared-home``, ``shared-profile`` and
``shared-runtime-dir`` (under each, the two environments run as one Unix user, so the
kill reaches both). ``shared-clipboard`` does not make a crash spread. Besides the leaks,
its own fault `faults.kill_with_bystander`, a kill that also hits a bystander's
programs, must make it report ``cross``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import ClassVar

from cleanroom.core.detectors import Bystander, blast_radius_rows
from cleanroom.core.isolation import IsolationRow
from cleanroom.environments.interface import Desktops, Kill, Needs
from cleanroom.environments.leaky_setups import Leak
from cleanroom.environments.watchdog import Watchdog
from cleanroom.isolation.battery import IsolationCheck, Schedule, TrialContext
from cleanroom.isolation.checks.latency import LatencyTimer
from cleanroom.isolation.fault import Fault
from cleanroom.lifecycle import wait_until

NAME = "crash_blast_radius"
BACK_WITHIN_S = 120.0  # a full rebuild: display, session, home and every program
LATENCY_BOUND_MS = 5000.0  # one screenshot of a bystander while another env restarts
PHASE_S = 3.0  # how long bystanders are timed before the kill and after the return

Killer = Callable[[Desktops, str], list[str]]


def kill_environment(pool: Desktops, target: str) -> list[str]:
    """Kill every process of the target's Unix user at once; return what was hit."""
    pool.kill(target, Kill.EVERYTHING, "the crash test killed every process of its user")
    return [target]


class CrashBlastRadiusCheck(IsolationCheck):
    """Kill one environment outright; it must come back, and nobody else may be touched."""

    name: ClassVar[str] = NAME
    number: ClassVar[int] = 11
    schedule: ClassVar[Schedule] = Schedule(window=1, soak=1, on_demand=True)
    detects: ClassVar[tuple[Leak, ...]] = (
        Leak.SHARED_DISPLAY,
        Leak.SHARED_PROFILE,
        Leak.SHARED_RUNTIME_DIR,
        Leak.SHARED_HOME,
    )
    # Everything it does goes through the interface: any provider runs it.
    requires: ClassVar[Needs] = Needs()
    faults: ClassVar[tuple[Fault, ...]] = (Fault.CRASH_HITS_BYSTANDER,)
    # Any program will do: its death is what shows a blast radius (a bystander running
    # only its display leaves the fault `kill_with_bystander` nothing to hit).
    needs: ClassVar[tuple[str, ...]] = ("terminal",)

    def __init__(
        self,
        *,
        back_within_s: float = BACK_WITHIN_S,
        latency_bound_ms: float = LATENCY_BOUND_MS,
        phase_s: float = PHASE_S,
        kill: Killer = kill_environment,
    ) -> None:
        self.back_within_s = back_within_s
        self.latency_bound_ms = latency_bound_ms
        self.phase_s = phase_s
        self.kill = kill

    def pairs(self, ctx: TrialContext) -> list[tuple[str, str]]:
        """From each acting environment to every other environment, the canary included."""
        return [(a, b) for a in ctx.acting_envs for b in ctx.pool.names if a != b]

    def run_trial(self, ctx: TrialContext, trial: int) -> list[IsolationRow]:
        """Kill one environment, wait for it to come back, and judge every bystander."""
        pool = ctx.pool
        target = ctx.acting_envs[trial % len(ctx.acting_envs)]
        bystanders = [n for n in pool.names if n != target]
        before = {b: programs(pool, b) for b in bystanders}
        generations = {b: pool.generation(b) for b in pool.names}

        timer = LatencyTimer(ctx, NAME, bystanders)
        sampler = threading.Thread(target=timer.run, name="crash-latency", daemon=True)
        watchdog = Watchdog(pool, interval_s=0.5)
        sampler.start()
        try:
            time.sleep(self.phase_s)
            timer.phase = "during"
            killed_at = time.time()
            hit = self.kill(pool, target)
            watchdog.start()
            came_back = wait_until(
                lambda: _back(pool, target, generations[target], killed_at),
                self.back_within_s,
                poll_s=0.2,
            )
            back_after_s = time.time() - killed_at
            timer.phase = "after"
            time.sleep(self.phase_s)
        finally:
            timer.stop()
            sampler.join(timeout=30)
            watchdog.stop()

        seen = []
        for b in bystanders:
            pids_after = programs(pool, b)
            during = [ms for phase, ms in timer.samples.get(b, []) if phase == "during"]
            seen.append(
                Bystander(
                    env=b,
                    pids_before=before[b],
                    pids_after=pids_after,
                    dead_after=tuple(p.detail for p in pool.health(b)),
                    generation_before=generations[b],
                    generation_after=pool.generation(b),
                    latencies_ms=tuple(during),
                    failed_screenshots=sum(
                        1 for p, _ in timer.failures.get(b, []) if p != "before"
                    ),
                )
            )
        why = f"not back at a new generation within {self.back_within_s:.0f} s"
        ctx.write_evidence(
            NAME,
            trial,
            "crash.json",
            {
                "target": target,
                "killed": hit,
                "killed_at": killed_at,
                "came_back": came_back,
                "back_after_s": back_after_s,
                "back_within_s": self.back_within_s,
                "generation_before": generations[target],
                "generation_after": pool.generation(target),
                "latency_bound_ms": self.latency_bound_ms,
                "recoveries": watchdog.recoveries,
                "bystanders": [b.__dict__ for b in seen],
                "samples": timer.samples,
                "failures": timer.failures,
            },
        )
        return blast_radius_rows(
            NAME, trial, ctx.window, target, seen, self.latency_bound_ms, came_back, why
        )


def programs(pool: Desktops, env: str) -> tuple[int, ...]:
    """The pids of an environment's display and programs, in a fixed order."""
    return tuple(p.pid for p in pool.processes(env))


def _back(pool: Desktops, target: str, generation_before: int, killed_at: float) -> bool:
    """Whether the target runs again: a new generation, and programs ready since the kill."""
    ready_at = pool.ready_since(target)
    ready = ready_at is not None and ready_at > killed_at
    return pool.generation(target) > generation_before and ready and not pool.health(target)
