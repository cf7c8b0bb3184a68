"""An in-memory pool of desktops (`interface.Desktops`), for unit tests of what runs on
desktops: an isolation check's trial, a control, a policy, the HTTP API.

Each environment is a few plain values: a focused program, the text typed into each
program, two selections, files beneath a home and programs that can be made to die.
Generations, the stale-action gate and breakage attribution are the real ones (`gate`).
Four leaky setups are modelled, each by one value two environments share, so a check's
leaky control can be shown to fire here: ``shared-clipboard`` (one pair of selections),
``shared-display`` (one keyboard focus, one clipboard, one set of windows),
``shared-home`` (one home) and ``shared-profile`` (one program state). No process, display
or file is made; commands and URLs are declared out of reach (`Capabilities`).
"""

from __future__ import annotations

import hashlib
import struct
import threading
import time
import zlib
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cleanroom.core.breakage import Breakage, Evidence, Part, Problem
from cleanroom.core.canary import CANARY_ENV
from cleanroom.environments.actions import Action
from cleanroom.environments.errors import (
    BadAction,
    CanaryIsReadOnly,
    NoSuchWindow,
    SelectionUnanswered,
)
from cleanroom.environments.interface import (
    SELECTIONS,
    AccessibilityTree,
    ActResult,
    Capabilities,
    Clipboard,
    ClipboardRead,
    CommandResult,
    Desktops,
    DisplayedWindow,
    EnvironmentState,
    FileStat,
    FocusedText,
    Kill,
    Obs,
    Observation,
    Pixels,
    Places,
    ProcessInfo,
    SandboxLimits,
    Screenshot,
    ScreenSize,
    Started,
    TreeItem,
    Unsupported,
    WindowInfo,
    WindowList,
)
from cleanroom.environments.leaky_setups import DONOR, TAKER, Leak
from cleanroom.environments.pool.gate import Gate

CAPABILITIES = Capabilities(
    leaky_setups=True,
    warm_standby=False,
    accessibility=True,
    commands=False,
    open_url=False,
    real_desktops=False,
)
MODELLED_LEAKS = (Leak.SHARED_CLIPBOARD, Leak.SHARED_DISPLAY, Leak.SHARED_HOME, Leak.SHARED_PROFILE)
_PIDS = iter(range(100_000, 10**9))


@dataclass
class Desk:
    """What one display holds: the focused program and the two selections."""

    focus: str | None = None
    selections: dict[str, str] = field(default_factory=dict)
    # Selections a program of the environment owns and never answers for (a test's).
    silent: set[str] = field(default_factory=set)


@dataclass
class MemoryEnvironment:
    """One environment's state (`interface.ActionTarget`)."""

    name: str
    programs: tuple[str, ...]
    desk: Desk
    texts: dict[str, str]  # program -> its document's text
    home: dict[str, bytes]
    pids: dict[str, int] = field(default_factory=dict)
    dead: set[str] = field(default_factory=set)
    keys_down: set[str] = field(default_factory=set)
    ready_at: float | None = None

    def start(self) -> None:
        """Every program running again, the focus on the first."""
        self.pids = {"display": next(_PIDS)} | {p: next(_PIDS) for p in self.programs}
        self.ready_at = time.time()
        self.dead.clear()
        self.desk.focus = self.programs[0] if self.programs else None

    def type_text(self, text: str) -> None:
        focus = self.desk.focus
        if focus is None:
            return
        self.texts[focus] = self.texts.get(focus, "") + text

    def key_down(self, key: str) -> None:
        self.keys_down.add(key)

    def key_up(self, key: str) -> None:
        self.keys_down.discard(key)

    def hotkey(self, keys: str) -> None:
        return None

    def click(self, x: int, y: int, button: int, count: int) -> None:
        return None

    def move(self, x: int, y: int) -> None:
        return None

    def focus_window(self, window_id: int) -> None:
        for program, pid in self.pids.items():
            if pid == window_id:
                self.desk.focus = program
                return
        raise NoSuchWindow(f"{self.name} shows no window {window_id}")

    def focus_program(self, program: str) -> None:
        if program not in self.pids or program in self.dead:
            raise NoSuchWindow(f"{self.name} shows no {program} window")
        self.desk.focus = program

    def set_clipboard(self, text: str, selections: tuple[str, ...]) -> None:
        for s in selections:
            self.desk.selections[s] = text
            self.desk.silent.discard(s)  # the harness owns it now

    def clear_clipboard(self) -> None:
        self.desk.selections.clear()
        self.desk.silent.clear()

    def read_clipboard(self, selection: str = "CLIPBOARD") -> ClipboardRead:
        if selection not in SELECTIONS:
            raise BadAction(f"unknown selection {selection!r}; use one of {', '.join(SELECTIONS)}")
        if selection in self.desk.silent:
            raise SelectionUnanswered(self.name, selection, 0x600001)
        return ClipboardRead(selection, self.desk.selections.get(selection))

    def windows(self) -> list[WindowInfo]:
        return [
            WindowInfo(pid, f"{program} - {self.name}", program, 0, 0, 640, 480)
            for program, pid in self.pids.items()
            if program not in self.dead and program != "display"
        ]

    def damage(self) -> list[Problem]:
        return [
            Problem(Part.PROGRAM, f"{p} (pid {self.pids[p]}) is dead") for p in sorted(self.dead)
        ]


class MemoryDesktops:
    """The canary and ``envs`` acting environments, in memory (`interface.Desktops`)."""

    provider = "memory"
    capabilities = CAPABILITIES

    def __init__(
        self,
        run_dir: Path,
        envs: int = 2,
        programs: tuple[str, ...] = ("writer", "terminal"),
        leak: Leak | None = None,
        home: dict[str, bytes] | None = None,
        screen: ScreenSize | None = None,
    ) -> None:
        if leak is not None and leak not in MODELLED_LEAKS:
            raise Unsupported(self.provider, [f"leaky_setups ({leak.value} is not modelled)"])
        self.run_dir = run_dir
        self.leak = leak
        self.screen = screen or ScreenSize()
        self._programs = programs
        self._template = dict(home or {})
        self._names = [f"env{i:02d}" for i in range(envs + 1)]
        self.envs: dict[str, MemoryEnvironment] = {}
        self.gate = Gate(run_dir, self._evidence)
        self.before_wipe: list[Callable[[str], None]] = []
        self.on_generation = self.gate.on_generation

    # -- the provider ----------------------------------------------------------------------

    @property
    def names(self) -> list[str]:
        return list(self.envs)

    def start(self) -> None:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        for name in self._names:
            self.envs[name] = self._make(name)
            self.envs[name].start()
            self.gate.add(name)

    def _make(self, name: str) -> MemoryEnvironment:
        donor = self.envs.get(DONOR) if name == TAKER else None
        leak = self.leak if donor is not None else None
        programs = ("writer",) if name == CANARY_ENV else self._programs
        return MemoryEnvironment(
            name,
            programs,
            desk=donor.desk
            if donor and leak in (Leak.SHARED_CLIPBOARD, Leak.SHARED_DISPLAY)
            else Desk(),
            texts=donor.texts
            if donor and leak in (Leak.SHARED_DISPLAY, Leak.SHARED_PROFILE)
            else {},
            home=donor.home if donor and leak is Leak.SHARED_HOME else dict(self._template),
        )

    def stop(self) -> None:
        self.envs.clear()
        self.gate.log.close()

    def _env(self, name: str) -> MemoryEnvironment:
        self.gate.lock(name)  # an unknown environment raises here
        return self.envs[name]

    def generation(self, name: str) -> int:
        return self.gate.book.current(name)

    def lock(self, name: str) -> threading.RLock:
        return self.gate.lock(name)

    def reset(self, name: str, generation: int | None = None, *, why: str = "reset") -> int:
        if generation is not None:
            self.gate.check(name, generation, "reset")
        return self._renew(name, "reset", why, None)

    def policy_reset(self, name: str, generation: int) -> int:
        if name == CANARY_ENV:
            current = self.generation(name)
            self.gate.log.write(name, generation, current, "reset", "refused-canary")
            raise CanaryIsReadOnly(f"{CANARY_ENV} is the canary and is never reset by a policy")
        return self.reset(name, generation, why="policy reset")

    def recover(self, name: str, why: str, left_by: Breakage | None = None) -> int:
        return self._renew(name, "recover", why, left_by)

    def _renew(self, name: str, kind: str, why: str, left_by: Breakage | None) -> int:
        env = self._env(name)
        for hook in list(self.before_wipe):
            hook(name)
        before = self.generation(name)
        new = self.gate.raise_generation(name, why, left_by)
        with self.lock(name):
            self.gate.log.write(name, before, new, kind, "applied", why)
            env.home.clear()
            env.home.update(self._template)
            env.texts.clear()
            env.desk.selections.clear()
            env.desk.silent.clear()
            env.start()
        return new

    def standby_ready(self, name: str, timeout_s: float = 60.0) -> bool:
        return False

    def limits_for(self, name: str) -> SandboxLimits:
        return SandboxLimits()

    def health(self, name: str) -> list[Problem]:
        return self._env(name).damage()

    def _evidence(self, name: str, injected: str | None) -> Evidence:
        return Evidence(tuple(self._env(name).damage()), injected=injected)

    def breakage(self, name: str) -> Breakage | None:
        self._env(name)
        return self.gate.breakage(name)

    def inject_fault(self, name: str, what: str) -> None:
        self.gate.inject_fault(name, what)

    def kill(self, name: str, scope: Kill, why: str) -> None:
        self.inject_fault(name, why)
        env = self._env(name)
        env.dead.update(env.pids)

    def ready_since(self, name: str) -> float | None:
        env = self._env(name)
        return None if env.dead else env.ready_at

    def without_generation_check(self) -> AbstractContextManager[None]:
        return self.gate.unchecked()

    def describe(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "leak": self.leak.value if self.leak else None,
            "environments": [
                {"name": n, "generation": self.generation(n), "problems": self.health(n)}
                for n in self.names
            ],
        }

    def places(self, name: str) -> Places:
        self._env(name)
        folder = self.run_dir / "places" / name
        return Places(name, folder / "home", (), folder / "run", self.run_dir / "logs" / name)

    # -- the controller --------------------------------------------------------------------

    def act(self, name: str, generation: int, action: Action) -> ActResult:
        if name == CANARY_ENV:
            current = self.generation(name)
            self.gate.log.write(name, generation, current, action.kind, "refused-canary")
            raise CanaryIsReadOnly(f"{CANARY_ENV} is the canary and never receives an action")
        env = self._env(name)
        with self.lock(name):
            self.gate.check(name, generation, action.kind)
            try:
                value = action.apply(env)
            except BadAction as exc:
                self.gate.log.write(name, generation, generation, action.kind, "rejected", str(exc))
                raise
            self.gate.log.write(name, generation, generation, action.kind, "applied")
        return ActResult(name, generation, action.kind, value)

    def observe(self, name: str, generation: int, kind: type[Obs]) -> Obs:
        env = self._env(name)
        with self.lock(name):
            self.gate.check(name, generation, f"observe:{kind.kind}")
            observation = self._read(env, kind)
        assert isinstance(observation, kind)
        return observation

    @property
    def action_log(self) -> Path:
        return self.gate.log.path

    def _read(self, env: MemoryEnvironment, kind: type) -> Observation:
        focus = env.desk.focus
        text = env.texts.get(focus, "") if focus is not None else None
        if kind is Screenshot:
            return Screenshot(_png(self.screen, repr(sorted(env.texts.items()))))
        if kind is WindowList:
            return WindowList(tuple(env.windows()))
        if kind is FocusedText:
            return FocusedText(focus, "document text", focus, text, text)
        if kind is Clipboard:
            return Clipboard(tuple(env.read_clipboard(s) for s in SELECTIONS))
        if kind is AccessibilityTree:
            items = "".join(
                f'<document name="{program}">{body}</document>'
                for program, body in env.texts.items()
            )
            return AccessibilityTree(
                f"<desktop-frame>{items}</desktop-frame>", nodes=len(env.texts)
            )
        return EnvironmentState(
            env.name, self.generation(env.name), env.name == CANARY_ENV, env.programs, self.screen
        )

    def processes(self, name: str) -> list[ProcessInfo]:
        env = self._env(name)
        return [ProcessInfo(p, pid, p not in env.dead) for p, pid in env.pids.items()]

    def python(self, name: str) -> str:
        self._env(name)
        return "python3"

    def read_selection(self, name: str, selection: str = "CLIPBOARD") -> ClipboardRead:
        return self._env(name).read_clipboard(selection)

    def harness_act(self, name: str, action: Action) -> str | None:
        with self.lock(name):
            return action.apply(self._env(name))

    def write_home_file(self, name: str, relative: str, data: bytes) -> Path:
        self._env(name).home[relative] = data
        return self.places(name).home / relative

    def displayed_windows(self, name: str) -> list[DisplayedWindow]:
        env = self._env(name)
        shown_to = tuple(n for n, e in self.envs.items() if e.desk is env.desk)
        return [
            DisplayedWindow(w.id, w.title, w.id, owner, shown_to)
            for owner in shown_to
            for w in self.envs[owner].windows()
        ]

    def tree_items(self, name: str) -> list[TreeItem]:
        env = self._env(name)
        sharing = [n for n, e in self.envs.items() if e.texts is env.texts]
        return [
            TreeItem(program, "paragraph", program, text, program, "frame", sharing[0])
            for program, text in env.texts.items()
        ]

    def pixels(self, name: str) -> Pixels:
        env = self._env(name)
        r, g, b = hashlib.sha256(repr(sorted(env.texts.items())).encode()).digest()[:3]
        width, height = self.screen.width, self.screen.height
        return Pixels(width, height, bytes((r, g, b)) * (width * height))

    def release_keys(self, name: str) -> None:
        self._env(name).keys_down.clear()

    def stat_home_file(self, name: str, relative: str) -> FileStat | None:
        data = self._env(name).home.get(relative)
        return None if data is None else FileStat(len(data), 0, True)

    def screen_size(self, name: str) -> ScreenSize:
        self._env(name)
        return self.screen

    def read_home_file(self, name: str, relative: str, limit: int) -> bytes | None:
        data = self._env(name).home.get(relative)
        return None if data is None or len(data) > limit else data

    def run_inside(self, name: str, argv: list[str], timeout_s: float = 60.0) -> CommandResult:
        raise Unsupported(self.provider, ["commands"])

    def start_inside(self, name: str, argv: list[str], log_name: str) -> tuple[Started, Path]:
        raise Unsupported(self.provider, ["commands"])

    def end_inside(self, name: str, started: Started, grace_s: float = 5.0) -> None:
        raise Unsupported(self.provider, ["commands"])

    def open_url(self, name: str, url: str) -> None:
        raise Unsupported(self.provider, ["open_url"])


def _png(size: ScreenSize, seen: str) -> bytes:
    """A small PNG whose one colour stands for what the screen shows."""
    r, g, b = hashlib.sha256(seen.encode()).digest()[:3]
    width, height = max(1, size.width // 64), max(1, size.height // 64)
    raw = b"".join(b"\x00" + bytes((r, g, b)) * width for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


if TYPE_CHECKING:  # the in-memory provider is a whole `Desktops`, as mypy checks here
    _CONFORMS: type[Desktops] = MemoryDesktops
