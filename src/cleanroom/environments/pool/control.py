"""The controller half of the host pool (`interface.DesktopController`): typed actions
applied and typed observations read behind the gate, and the harness's own reads and
plants, each on one environment of the lifecycle's.

`pool.Pool` is this and the provider half together.
"""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path

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
    ClipboardRead,
    CommandResult,
    DisplayedWindow,
    EnvironmentState,
    FileStat,
    Obs,
    Pixels,
    ProcessInfo,
    ScreenSize,
    Started,
    TreeItem,
)
from cleanroom.environments.pool import attribution
from cleanroom.environments.pool.environment import DesktopEnvironment
from cleanroom.environments.pool.gate import Gate
from cleanroom.environments.pool.lifecycle import Lifecycle
from cleanroom.environments.pool.observations import READERS, state_of
from cleanroom.environments.session.processes import kill_pids, process_tree


class Control:
    """Acting on and observing the environments of ``life``, behind ``gate``."""

    gate: Gate
    life: Lifecycle

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
        return Pixels(*self.env(name).pixels())

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
