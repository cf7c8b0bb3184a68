"""Timing bystanders' screenshots while a check disturbs another environment: the one
timer crash_blast_radius, noisy_neighbor and dialog_steal share."""

from __future__ import annotations

import hashlib
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from cleanroom.environments.interface import Screenshot
from cleanroom.isolation.battery import TrialContext


@dataclass
class LatencyTimer:
    """Times screenshots of the bystanders, through the pool, in rounds (`shoot_once`, or
    `run` in a thread until `stop`), and records each as ``test``'s latency sample of
    its phase. ``shots`` keeps each screenshot's digest for the evidence."""

    ctx: TrialContext
    test: str
    bystanders: list[str]
    phase: str = "before"
    samples: dict[str, list[tuple[str, float]]] = field(default_factory=dict)
    failures: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    shots: list[dict[str, Any]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    def shoot_once(self) -> None:
        """One screenshot of every bystander, each timed."""
        for env in self.bystanders:
            phase = self.phase
            started = time.perf_counter()
            try:
                shot = self.ctx.pool.observe(env, self.ctx.pool.generation(env), Screenshot)
            except Exception as exc:  # whatever the screen library raises: a failed shot
                self.failures.setdefault(env, []).append((phase, repr(exc)[:200]))
                continue
            ms = (time.perf_counter() - started) * 1000
            self.samples.setdefault(env, []).append((phase, ms))
            self.ctx.record_latency(self.test, env, ms, phase)
            digest = hashlib.sha256(shot.png).hexdigest()[:16]
            self.shots.append(
                {
                    "env": env,
                    "phase": phase,
                    "ms": round(ms, 2),
                    "sha256": digest,
                    "at": time.time(),
                }
            )

    def run(self) -> None:
        while not self._stop.is_set():
            self.shoot_once()
            self._stop.wait(0.2)

    def stop(self) -> None:
        self._stop.set()
