"""Isolation test 14, noisy_neighbor: one environment takes all it can; nobody else may pay.

One acting environment runs the hog (`noisy_hog`) inside its sandbox, as its user: CPU
on more processes than the machine has cores, memory, tasks, its private ``/tmp`` and
its home, each a little past what the pool lets an environment take
(`PoolConfig.limits`). Meanwhile every other environment, the canary included, is
screenshotted through the pool in a loop and each screenshot is timed (phases
``before``, ``during``, ``after``), as in crash_blast_radius, and the canary watcher's
own look (focused text through AT-SPI, the window list, the clipboard:
`canary.watcher.take_sample`) is taken and timed in a loop of its own.

Verdict, one row from the hogging environment to each bystander (`noisy_neighbor_rows`):
``cross`` when the hog held more than its limits (what it held past them came out of
the machine everyone shares), or when a bystander's programs died or were replaced, its
generation changed, or a screenshot of it failed or took longer than
`LATENCY_BOUND_MS`, or a look at the canary failed or took longer than the watcher's
interval (`LOOK_BOUND_MS`: a slower one would cost it a look); ``lost`` when the hog
never said what it held; ``clean`` otherwise.
The hog's environment is reset afterwards if the kernel killed one of its programs at
its limits: that loss is its own, not a bystander's.

Leaks it must catch: ``unlimited`` (env01 and env02 without their limits: the hog holds
everything it asks for) and ``open-host`` (no sandboxes at all).
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import ClassVar

from cleanroom.core.canary import CANARY_ENV, INTERVAL_S
from cleanroom.core.detectors import Bystander, HogBounds, HogReport, noisy_neighbor_rows
from cleanroom.core.isolation import IsolationRow
from cleanroom.environments.interface import Needs
from cleanroom.environments.leaky_setups import Leak
from cleanroom.environments.policy.handle import LocalHandle
from cleanroom.isolation.battery import IsolationCheck, Schedule, TrialContext
from cleanroom.isolation.canary.watcher import take_sample
from cleanroom.isolation.checks.crash_blast_radius import LATENCY_BOUND_MS, programs
from cleanroom.isolation.checks.latency import LatencyTimer

NAME = "noisy_neighbor"
HOG_SOURCE = Path(__file__).with_name("noisy_hog.py")
HOLD_S = 1.0  # how long the hog holds everything it took
PHASE_S = 1.0  # bystanders timed before the hog starts and after it ends
PAST_LIMIT_MIB = 256  # how far past each limit the hog asks
PAST_LIMIT_TASKS = 64
HOG_WITHIN_S = 120.0
LOOK_BOUND_MS = INTERVAL_S * 1000


class NoisyNeighborCheck(IsolationCheck):
    """One environment hogs CPU, memory, tasks and disk; the others are timed."""

    name: ClassVar[str] = NAME
    number: ClassVar[int] = 14
    schedule: ClassVar[Schedule] = Schedule(window=1, soak=1)
    detects: ClassVar[tuple[Leak, ...]] = (Leak.UNLIMITED, Leak.OPEN_HOST)
    requires: ClassVar[Needs] = Needs(real_desktops=True, commands=True)

    def __init__(self, *, hold_s: float = HOLD_S, phase_s: float = PHASE_S) -> None:
        self.hold_s = hold_s
        self.phase_s = phase_s

    def pairs(self, ctx: TrialContext) -> list[tuple[str, str]]:
        """From each acting environment to every other environment, the canary included."""
        return [(a, b) for a in ctx.acting_envs for b in ctx.pool.names if a != b]

    def run_trial(self, ctx: TrialContext, trial: int) -> list[IsolationRow]:
        pool = ctx.pool
        hog_env = ctx.acting_envs[trial % len(ctx.acting_envs)]
        limits = pool.limits_for(hog_env)
        bounds = HogBounds(limits.memory_mib, limits.pids, limits.tmpfs_mib, limits.home_mib)
        bystanders = [n for n in pool.names if n != hog_env]
        before = {b: programs(pool, b) for b in bystanders}
        generations = {b: pool.generation(b) for b in pool.names}
        cfg = {
            "cpu_procs": 2 * (os.cpu_count() or 2),
            "memory_mib": limits.memory_mib + PAST_LIMIT_MIB,
            "tasks": limits.pids + PAST_LIMIT_TASKS,
            "tmp_mib": limits.tmpfs_mib + PAST_LIMIT_MIB,
            "tmp": "/tmp",
            "home_mib": limits.home_mib + PAST_LIMIT_MIB,
            "home": str(pool.places(hog_env).home),
            "hold_s": self.hold_s,
        }
        pool.inject_fault(hog_env, "the noisy-neighbour check ran its hog past every limit")
        argv = [pool.python(hog_env), "-I", "-c", HOG_SOURCE.read_text(), json.dumps(cfg)]
        timer = LatencyTimer(ctx, NAME, bystanders)
        sampler = threading.Thread(target=timer.run, name="noisy-latency", daemon=True)
        looks = _CanaryLooks(LocalHandle(pool, CANARY_ENV)) if CANARY_ENV in bystanders else None
        looker = (
            threading.Thread(target=looks.run, name="noisy-looks", daemon=True) if looks else None
        )
        outcome: dict[str, object] = {}

        def hog() -> None:
            try:
                answer = pool.run_inside(hog_env, argv, HOG_WITHIN_S)
                outcome["answer"] = (answer.code, answer.output)
            except Exception as exc:  # whatever running inside raised: no report
                outcome["error"] = f"{type(exc).__name__}: {exc}"

        sampler.start()
        try:
            time.sleep(self.phase_s)
            timer.phase = "during"
            if looker is not None:
                looker.start()
            started = time.time()
            runner = threading.Thread(target=hog, name="noisy-hog", daemon=True)
            runner.start()
            runner.join(HOG_WITHIN_S + 10)
            took_s = time.time() - started
            timer.phase = "after"
            if looks is not None:
                looks.stop()
            time.sleep(self.phase_s)
        finally:
            timer.stop()
            if looks is not None and looker is not None:
                looks.stop()
                looker.join(timeout=30)
            sampler.join(timeout=30)
        report = _report(outcome)
        seen = [
            Bystander(
                env=b,
                pids_before=before[b],
                pids_after=programs(pool, b),
                dead_after=tuple(p.detail for p in pool.health(b)),
                generation_before=generations[b],
                generation_after=pool.generation(b),
                latencies_ms=tuple(ms for p, ms in timer.samples.get(b, []) if p == "during"),
                failed_screenshots=sum(1 for p, _ in timer.failures.get(b, []) if p != "before"),
                looks_ms=tuple(looks.ms) if looks and b == CANARY_ENV else (),
                failed_looks=len(looks.failed) if looks and b == CANARY_ENV else 0,
            )
            for b in bystanders
        ]
        ctx.write_evidence(
            NAME,
            trial,
            "noisy.json",
            {
                "hog_env": hog_env,
                "asked": cfg,
                "bounds": vars(bounds),
                "held": vars(report),
                "took_s": took_s,
                "latency_bound_ms": LATENCY_BOUND_MS,
                "look_bound_ms": LOOK_BOUND_MS,
                "canary_looks_ms": looks.ms if looks else [],
                "canary_looks_failed": looks.failed if looks else [],
                "bystanders": [vars(b) for b in seen],
                "samples": timer.samples,
                "failures": timer.failures,
            },
        )
        # What the kernel killed in the hog's environment at its limits was its own: an
        # environment left with a dead program is reset, at a new generation.
        if pool.health(hog_env):
            pool.reset(hog_env, why="noisy_neighbor left it broken")
        return noisy_neighbor_rows(
            NAME,
            trial,
            ctx.window,
            hog_env,
            report,
            bounds,
            seen,
            LATENCY_BOUND_MS,
            LOOK_BOUND_MS,
            CANARY_ENV,
        )


class _CanaryLooks:
    """Takes the canary watcher's look in a loop while the hog runs, timing each."""

    def __init__(self, handle: LocalHandle) -> None:
        self.handle = handle
        self.ms: list[float] = []
        self.failed: list[str] = []
        self._stop = threading.Event()

    def run(self) -> None:
        while not self._stop.is_set():
            started = time.perf_counter()
            sample = take_sample(self.handle, None)
            ms = (time.perf_counter() - started) * 1000
            if sample.ok:
                self.ms.append(ms)
            else:
                self.failed.append((sample.detail or "unreadable")[:200])
            self._stop.wait(0.2)

    def stop(self) -> None:
        self._stop.set()


def _report(outcome: dict[str, object]) -> HogReport:
    if "error" in outcome:
        return HogReport(error=str(outcome["error"]))
    answer = outcome.get("answer")
    if not isinstance(answer, tuple):
        return HogReport(error=f"no answer within {HOG_WITHIN_S:g} s")
    code, out = answer
    for line in str(out).splitlines():
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if isinstance(data, dict):
            return HogReport.from_probe(data)
    return HogReport(error=f"exit code {code}, no report: {str(out)[-300:]}")
