"""The pool: the canary ``env00`` plus ``env01``…``envNN``, on the host, each in a sandbox
of its own or with its programs in a container of their own (`interface.Desktops`).

A facade: the plan (`plan`), the lifecycle (`lifecycle`), the gate of generations and
breakage (`gate`) and the observation readers (`observations`) do the work. Every action
and observation names the environment and the generation it aims at; a stale one is
refused and logged, never applied. Reset and crash recovery raise the generation before
they touch anything, so an action that arrives while they run is refused once they
finish.
"""

from __future__ import annotations

import contextlib
import secrets
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from cleanroom.core.breakage import Breakage, Problem
from cleanroom.core.canary import CANARY_ENV
from cleanroom.environments.actions import Action
from cleanroom.environments.errors import (
    BadAction,
    CanaryIsReadOnly,
    NoSuchWindow,
    UnknownEnvironment,
)
from cleanroom.environments.interface import (
    ActResult,
    Capabilities,
    ClipboardRead,
    CommandResult,
    Desktops,
    DisplayedWindow,
    EnvironmentState,
    FileStat,
    Kill,
    Obs,
    Pixels,
    Places,
    ProcessInfo,
    SandboxLimits,
    ScreenSize,
    Started,
    TreeItem,
    Unsupported,
)
from cleanroom.environments.leaky_setups import Leak
from cleanroom.environments.pool import attribution
from cleanroom.environments.pool.environment import DesktopEnvironment
from cleanroom.environments.pool.gate import Gate
from cleanroom.environments.pool.lifecycle import Lifecycle
from cleanroom.environments.pool.observations import READERS, state_of
from cleanroom.environments.pool.plan import PoolConfig, PoolPlan
from cleanroom.environments.session.processes import kill_pids, process_tree
from cleanroom.store.rundb import RunStore


def on_host(desktops: Desktops) -> Pool:
    """``desktops`` as the host pool, for the checks whose trials reach its processes and
    displays; `Unsupported` on any other provider (say so with ``real_desktops``)."""
    if not isinstance(desktops, Pool):
        raise Unsupported(desktops.provider, ["real_desktops"])
    return desktops


class Pool:
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

    def env(self, name: str) -> DesktopEnvironment:
        """The environment object (for ``environments`` itself: others use the interface)."""
        try:
            return self.life.envs[name]
        except KeyError:
            raise UnknownEnvironment(f"no environment named {name!r}") from None

    def lock(self, name: str) -> threading.RLock:
        """The environment's lock: held while an action, reset or recovery runs."""
        return self.gate.lock(name)

    def generation(self, name: str) -> int:
        """The environment's current generation."""
        return self.gate.book.current(name)

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

    # -- the controller: acting and observing --------------------------------------------

    def act(self, name: str, generation: int, action: Action) -> ActResult:
        """Apply one action if its generation is current; refuse (and log) otherwise."""
        if name == CANARY_ENV:
            self.gate.log.write(
                name, generation, self.generation(name), action.kind, "refused-canary"
            )
            raise CanaryIsReadOnly(f"{CANARY_ENV} is the canary and never receives an action")
        self.env(name)
        with self.lock(name):
            self.gate.check(name, generation, action.kind)
            try:
                value = action.apply(self.env(name))
            except NoSuchWindow as exc:  # the agent's mistake, or its program just ended
                failure = self.gate.failed(name, generation, action.kind, exc)
                if failure is exc:
                    raise
                raise failure from exc
            except BadAction as exc:
                self.gate.log.write(name, generation, generation, action.kind, "rejected", str(exc))
                raise
            except Exception as exc:
                raise self.gate.failed(name, generation, action.kind, exc) from exc
            self.gate.log.write(name, generation, generation, action.kind, "applied")
        return ActResult(name, generation, action.kind, value)

    def observe(self, name: str, generation: int, kind: type[Obs]) -> Obs:
        """One observation of ``kind`` (observing the canary is allowed: it changes nothing)."""
        what = f"observe:{kind.kind}"
        self.env(name)
        with self.lock(name):
            self.gate.check(name, generation, what)
            try:
                observation = READERS[kind](self.env(name), self.generation(name))
            except BadAction:
                raise
            except Exception as exc:
                raise self.gate.failed(name, generation, what, exc) from exc
        assert isinstance(observation, kind)
        return observation

    def state(self, name: str) -> EnvironmentState:
        """What a policy may know about an environment: its generation and programs."""
        return state_of(self.env(name), self.generation(name))

    def processes(self, name: str) -> list[ProcessInfo]:
        """Its display server first, then its programs."""
        return self.env(name).processes()

    def python(self, name: str) -> str:
        """The environment's own Python interpreter."""
        return self.env(name).python

    def read_selection(self, name: str, selection: str = "CLIPBOARD") -> ClipboardRead:
        """A selection as any client of the environment's display reads it."""
        return self.env(name).read_clipboard(selection)

    def harness_act(self, name: str, action: Action) -> str | None:
        """An action of the harness's own, at the current generation, the canary's too."""
        with self.lock(name):
            value = action.apply(self.env(name))
            current = self.generation(name)
            self.gate.log.write(name, current, current, action.kind, "applied", "harness")
        return value

    def write_home_file(self, name: str, relative: str, data: bytes) -> Path:
        """Plant a file beneath the environment's home, owned by its user."""
        return self.env(name).write_home_file(relative, data)

    def displayed_windows(self, name: str) -> list[DisplayedWindow]:
        """Every mapped top-level window the environment's display shows, with its owner."""
        self.env(name)
        return attribution.displayed_windows(self.life.envs, name)

    def tree_items(self, name: str) -> list[TreeItem]:
        """Every text object of the environment's accessibility tree, with its owner."""
        self.env(name)
        return attribution.tree_items(self.life.envs, name)

    def pixels(self, name: str) -> Pixels:
        """The screen as the harness sees it, raw, outside the gate."""
        return Pixels(*self.env(name).live.screen.grab_rgb())

    def release_keys(self, name: str) -> None:
        """Release every key and button the harness holds down there."""
        with contextlib.suppress(Exception):
            self.env(name).live.input.release_all()

    def stat_home_file(self, name: str, relative: str) -> FileStat | None:
        """A file beneath the environment's home as looked at, never through a link."""
        return self.env(name).stat_home_file(relative)

    def screen_size(self, name: str) -> ScreenSize:
        """The size of the environment's screen."""
        return self.env(name).spec.screen

    def read_home_file(self, name: str, relative: str, limit: int) -> bytes | None:
        """A file beneath the environment's home, read no-follow, at most ``limit`` bytes."""
        return self.env(name).read_home_file(relative, limit)

    def run_inside(self, name: str, argv: list[str], timeout_s: float = 60.0) -> CommandResult:
        """``argv`` run where the environment's programs run, as its user."""
        return self.env(name).run_command(argv, timeout_s)

    def start_inside(self, name: str, argv: list[str], log_name: str) -> tuple[Started, Path]:
        """``argv`` started where the environment's programs run, its output in a log."""
        return self.env(name).start_inside(argv, log_name)

    def end_inside(self, name: str, started: Started, grace_s: float = 5.0) -> None:
        """End a command `start_inside` started, and everything it started."""
        self.env(name)
        kill_pids(process_tree(started.pid), grace_s=grace_s)
        with contextlib.suppress(Exception):
            started.wait(timeout=grace_s)

    def open_url(self, name: str, url: str) -> None:
        """Open a URL in the environment's browser (a harness setup step, not an action)."""
        with self.lock(name):
            self.env(name).open_url(url)
        current = self.generation(name)
        self.gate.log.write(name, current, current, "open_url", "applied", url)

    def describe(self) -> dict[str, Any]:
        """Every environment's status, for ``cleanroom envs status``."""
        return self.life.describe(self.generation)
