"""The pool: the canary ``env00`` plus ``env01``…``envNN``, on the host, each in a sandbox
of its own or with its programs in a container of their own (`interface.Desktops`).

A facade: the plan (`plan`), the lifecycle (`lifecycle`), the gate of generations and
breakage (`gate`) and the controller half (`control`, with the observation readers of
`observations`) do the work; this module is the provider half. Every action
and observation names the environment and the generation it aims at; a stale one is
refused and logged, never applied. Reset and crash recovery raise the generation before
they touch anything, so an action that arrives while they run is refused once they
finish.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from cleanroom.core.breakage import Breakage, Problem
from cleanroom.core.canary import CANARY_ENV
from cleanroom.environments.errors import CanaryIsReadOnly
from cleanroom.environments.interface import Capabilities, Kill, Places, SandboxLimits
from cleanroom.environments.leaky_setups import Leak
from cleanroom.environments.pool.control import Control
from cleanroom.environments.pool.gate import Gate
from cleanroom.environments.pool.lifecycle import Lifecycle
from cleanroom.environments.pool.plan import PoolConfig, PoolPlan
from cleanroom.store.rundb import RunStore


class Pool(Control):
    """Environments, generations and the action log of one run. Use `start` and `stop`."""

    def __init__(self, config: PoolConfig, run_dir: Path, store: RunStore | None = None) -> None:
        self.config = config
        self.run_dir = run_dir
        self.store = store
        self.pool_id = secrets.token_hex(3)
        self.plan = PoolPlan(config, self.pool_id, run_dir)
        self.root = self.plan.root
        self.gate = Gate(run_dir, lambda name, injected: self.env(name).evidence(injected), store)
        self.life = Lifecycle(self.plan, self.gate, store)
        # Called with an environment's name just before a reset or recovery wipes its home
        # and clipboard (the harness sweeps them for foreign tokens there).
        self.before_wipe: list[Callable[[str], None]] = []
        self.on_generation = self.gate.on_generation

    # -- the provider: lifecycle ---------------------------------------------------------

    @property
    def provider(self) -> str:
        return self.config.provider

    @property
    def capabilities(self) -> Capabilities:
        return self.config.capabilities

    @property
    def leak(self) -> Leak | None:
        return self.config.leak

    @property
    def action_log(self) -> Path:
        return self.gate.log.path

    @property
    def names(self) -> list[str]:
        """Every environment, the canary first."""
        return sorted(self.life.envs)

    def start(self) -> None:
        """Create every environment and return when all are ready; on failure undo all."""
        self.life.start()

    def stop(self) -> None:
        """Stop every environment, remove its user and home, and the pool's files."""
        self.life.stop()
        with contextlib.suppress(Exception):
            self.gate.log.close()

    def standby_ready(self, name: str, timeout_s: float = 60.0) -> bool:
        """Wait until ``name``'s spare slot is up; False without warm standby, or when it
        failed or took longer than ``timeout_s``."""
        standby = self.life.standby
        return standby is not None and standby.wait_ready(name, timeout_s)

    def limits_for(self, name: str) -> SandboxLimits:
        """What environment ``name`` may take (the canary weighs more)."""
        return self.plan.limits_for(name)

    def health(self, name: str) -> list[Problem]:
        """Every part of the environment found dead right now (empty: healthy)."""
        return self.env(name).damage()

    def ready_since(self, name: str) -> float | None:
        """When the environment's current generation became ready (None: not yet)."""
        return self.env(name).ready_at

    def kill(self, name: str, scope: Kill, why: str) -> None:
        """End ``scope`` of the environment as a crash would, said first as the harness's."""
        self.inject_fault(name, why)
        self.env(name).kill(scope)

    def without_generation_check(self) -> AbstractContextManager[None]:
        """Within the block stale actions are applied (a deliberate fault)."""
        return self.gate.unchecked()

    def places(self, name: str) -> Places:
        """Where the environment's state lives on the harness's host."""
        return self.env(name).places()

    def inject_fault(self, name: str, what: str) -> None:
        """Say, before the harness breaks an environment itself, that what breaks in it
        until its next generation is the harness's doing."""
        self.env(name)
        self.gate.inject_fault(name, what)

    def breakage(self, name: str) -> Breakage | None:
        """Who broke the environment, judged from what is dead in it now (None: nothing)."""
        self.env(name)
        return self.gate.breakage(name)

    def reset(self, name: str, generation: int | None = None, *, why: str = "reset") -> int:
        """Kill the environment's programs, restore its home, clear its clipboard, raise
        its generation and restart its programs; return the new generation once ready.
        With ``generation`` given, a stale one is refused like any action."""
        self.env(name)
        if generation is not None:
            self.gate.check(name, generation, "reset")
        return self._renew(name, "reset", why, None)

    def policy_reset(self, name: str, generation: int) -> int:
        """A reset a policy asked for: refused on the canary, stale generations refused."""
        if name == CANARY_ENV:
            self.gate.log.write(name, generation, self.generation(name), "reset", "refused-canary")
            raise CanaryIsReadOnly(f"{CANARY_ENV} is the canary and is never reset by a policy")
        return self.reset(name, generation, why="policy reset")

    def recover(self, name: str, why: str, left_by: Breakage | None = None) -> int:
        """Bring a crashed environment back at a new generation (the watchdog's remedy);
        ``left_by`` is who broke the generation it leaves, which an action still aimed
        at it is told (`StaleGeneration.left_by`)."""
        self.env(name)
        return self._renew(name, "recover", why, left_by)

    def _renew(self, name: str, kind: str, why: str, left_by: Breakage | None) -> int:
        for hook in list(self.before_wipe):
            hook(name)
        before = self.generation(name)
        reason = why if kind == "reset" else f"recover: {why}"
        new = self.gate.raise_generation(name, reason, left_by)
        with self.lock(name):
            self.gate.log.write(name, before, new, kind, "applied", why)
            if not self.life.swap_in_spare(name):
                env = self.env(name)
                self.life.reset(env) if kind == "reset" else self.life.rebuild(env)
        return new

    def describe(self) -> dict[str, Any]:
        """Every environment's status, for ``cleanroom envs status``."""
        return self.life.describe(self.generation)
