"""The desktop half's one interface: a provider for lifecycle, a controller for acting and
observing, the records they exchange and the capabilities a provider declares.

Split as OSWorld splits a desktop: the *provider* makes environments, starts and stops
them, resets one to a new generation (swapping in a warm spare where it keeps one) and
says what each may take of the machine; the *controller* applies typed actions and
returns typed observations, always aimed at one environment and the generation the
caller believes current (a stale one is refused, never applied).

Everything outside ``environments`` (isolation checks and controls, rollouts, the
harness, the cluster code, the OSWorld layer, the CLI) holds a `Desktops`, which is both,
and never imports a pool's parts (``pool``, ``session``, ``x11``, ``containers``): an
import contract in ``pyproject.toml`` says so. Code that opens, supervises or cleans up
pools goes through `providers`. A provider declares its `Capabilities` up front; a run
checks them with `require` before anything starts, so nothing is found missing by an
exception mid-run.

Implementations: `pool.Pool` on the host, each environment in a sandbox of its own or
with its programs in a container of their own, and `memory.MemoryDesktops`, an in-memory
stand-in on which a check's trial or a control is unit-tested without X. Every one
passes the contract suite (``tests/contract``).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass, fields
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar

# The typed actions, what they apply to and what a read returns: part of this interface.
from cleanroom.environments.actions import SELECTIONS as SELECTIONS
from cleanroom.environments.actions import Action as Action
from cleanroom.environments.actions import ActionTarget as ActionTarget
from cleanroom.environments.actions import ClipboardRead as ClipboardRead
from cleanroom.environments.errors import PoolError, UnknownEnvironment

if TYPE_CHECKING:
    from cleanroom.core.breakage import Breakage, Problem
    from cleanroom.environments.leaky_setups import Leak

# What every environment's home holds when a generation begins: the folders of a desktop
# home, and Writer's document, beneath the home.
DESKTOP_SKELETON: tuple[str, ...] = (
    "Desktop",
    "Documents",
    "Downloads",
    "Music",
    "Pictures",
    "Public",
    "Templates",
    "Videos",
)
DOCUMENT = "Documents/notes.odt"
# The folder of fonts every X server may be asked to read, and the font name in it: the
# channels check asks a display's server to read another environment's folder through it.
CONTROL_FONTS = Path("/run/cleanroom/x11/control-fonts")
CONTROL_FONT_NAME = "cleanroom-x-server-control"
# The programs an environment starts unless told otherwise.
DEFAULT_PROGRAMS = ("writer", "terminal", "browser")


# -- records ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScreenSize:
    """Width, height and depth of a virtual screen."""

    width: int = 1280
    height: int = 800
    depth: int = 24

    def xvfb_arg(self) -> str:
        """The ``-screen 0`` argument Xvfb takes."""
        return f"{self.width}x{self.height}x{self.depth}"

    @classmethod
    def parse(cls, text: str) -> ScreenSize:
        """``WIDTHxHEIGHT`` (``1920x1080``) as a screen of the default depth; `ValueError`
        for anything else, or a side below 64 or above 8192 pixels."""
        width, sep, height = text.strip().lower().partition("x")
        if not (sep and width.isdigit() and height.isdigit()):
            raise ValueError(f"a screen size looks like 1920x1080, not {text!r}")
        screen = cls(int(width), int(height))
        if not all(64 <= side <= 8192 for side in (screen.width, screen.height)):
            raise ValueError(f"a screen's sides are 64 to 8192 pixels, not {text!r}")
        return screen


@dataclass(frozen=True)
class WindowInfo:
    """One top-level window as the X server knows it."""

    id: int
    title: str
    wm_class: str
    x: int
    y: int
    width: int
    height: int

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


@dataclass(frozen=True)
class FocusedText:
    """The focused accessible object and its text; for a document, the whole text too."""

    kind: ClassVar[str] = "focused_text"

    app: str | None
    role: str | None
    name: str | None
    text: str | None
    document_text: str | None

    @property
    def content(self) -> str | None:
        """What a reader of the focused thing sees: the document if there is one."""
        return self.document_text if self.document_text is not None else self.text

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


@dataclass(frozen=True)
class ProcessInfo:
    """One process of an environment: its display server (``display``) or one of its
    programs (``writer``, ``terminal``, ``browser``), its pid and whether it still runs."""

    name: str
    pid: int
    alive: bool


@dataclass(frozen=True)
class FileStat:
    """A file beneath an environment's home as looked at, never through a link."""

    size: int
    mtime_ns: int
    regular: bool


@dataclass(frozen=True)
class Places:
    """Where an environment's state lives on the harness's host, each path absolute and
    never resolved through a link the environment left: its home, its programs' profiles,
    its runtime folder and its log folder in the run folder; and the Unix user whose
    files they are."""

    user: str
    home: Path
    profiles: tuple[Path, ...]
    runtime_dir: Path
    log_dir: Path


@dataclass(frozen=True)
class DisplayedWindow:
    """A mapped top-level window on an environment's display, and whose it is.

    ``owner`` is the environment whose program's process made it (the host pid of its
    client, as the X server knows it, within that program's process tree); None when no
    environment's is. ``shown_to`` are the environments whose display shows it (more than
    one when a display is shared)."""

    id: int
    title: str
    pid: int | None
    owner: str | None
    shown_to: tuple[str, ...]


@dataclass(frozen=True)
class TreeItem:
    """One text-bearing object of an environment's accessibility tree, and whose program
    published it (``owner``; None when no environment's process is that one)."""

    app: str | None
    role: str | None
    name: str | None
    text: str | None
    window: str | None
    window_role: str | None
    owner: str | None


class Started(Protocol):
    """A command started in an environment (`DesktopController.start_inside`)."""

    @property
    def pid(self) -> int: ...

    @property
    def returncode(self) -> int | None: ...

    def poll(self) -> int | None: ...
    def wait(self, timeout: float | None = None) -> int: ...


class Kill(StrEnum):
    """What the harness ends in an environment when it breaks one on purpose."""

    EVERYTHING = "everything"  # every process of the environment's user, as a crash
    PROGRAMS = "programs"  # its programs only


@dataclass(frozen=True)
class CommandResult:
    """What a command run in an environment returned: its exit code and output."""

    code: int
    output: str


@dataclass(frozen=True)
class SandboxLimits:
    """What one environment may take of the machine (its cgroup and its tmpfs mounts).

    The defaults are sized for a machine of 2 cores and 24 GiB running a handful of
    environments: a Writer and a browser fit in 3 GiB with room to spare; 4096 tasks
    (threads count) is ten times what a busy desktop session runs; the CPU weight is
    within the environments' group (`cgroups.ENVIRONMENTS`), a quarter of the canary's;
    the home is a tmpfs of ``home_mib`` (its pages count against the memory limit), on
    no file system the run folders or anyone else's home live on.

    ``ptys`` bounds the sandbox's own ``devpts`` (its ``max=``): every sandbox's and
    container's pseudo-terminals come out of the kernel's one pool of
    ``kernel.pty.max`` (4096) less ``kernel.pty.reserve`` (1024, kept for the host's own
    ``/dev/pts``), so 3072 for all of them. A pool of 32 environments and the canary,
    each with its display's sandbox and a warm spare of both, is 132 sandboxes: at 16
    each that is 2112, which leaves 960 to the host's containers and a second pool's
    canary, and no environment can take another's terminal. A terminal takes one.
    """

    memory_mib: int = 3072
    pids: int = 4096
    cpu_shares: int = 512
    tmpfs_mib: int = 512
    home_mib: int = 1024
    ptys: int = 16

    def __post_init__(self) -> None:
        for name in ("memory_mib", "pids", "cpu_shares", "tmpfs_mib", "home_mib", "ptys"):
            if getattr(self, name) < 1:
                raise ValueError(f"sandbox limit {name} must be at least 1")
        if self.cpu_shares < 2:
            raise ValueError("sandbox limit cpu_shares must be at least 2 (the kernel's floor)")

    def describe(self) -> dict[str, int]:
        return {
            "memory_mib": self.memory_mib,
            "pids": self.pids,
            "cpu_shares": self.cpu_shares,
            "tmpfs_mib": self.tmpfs_mib,
            "home_mib": self.home_mib,
            "ptys": self.ptys,
        }


# -- observations ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Screenshot:
    """The screen as PNG."""

    kind: ClassVar[str] = "screenshot"

    png: bytes

    def to_json(self) -> bytes:
        """The wire form: the PNG itself."""
        return self.png


@dataclass(frozen=True)
class Pixels:
    """The screen as raw RGB, three bytes a pixel, row by row (the harness's own look)."""

    width: int
    height: int
    rgb: bytes


@dataclass(frozen=True)
class WindowList:
    """The top-level windows, bottom first."""

    kind: ClassVar[str] = "windows"

    windows: tuple[WindowInfo, ...]

    def to_json(self) -> list[dict[str, Any]]:
        """The wire form: one object per window."""
        return [w.to_json() for w in self.windows]


@dataclass(frozen=True)
class Clipboard:
    """Both selections as any client of the display reads them (None: no owner)."""

    kind: ClassVar[str] = "clipboard"

    texts: tuple[ClipboardRead, ...]

    def text(self, selection: str = "CLIPBOARD") -> str | None:
        """One selection's text."""
        return next((r.text for r in self.texts if r.selection == selection), None)

    def to_json(self) -> dict[str, str | None]:
        """The wire form: selection name to text."""
        return {r.selection: r.text for r in self.texts}


@dataclass(frozen=True)
class AccessibilityTree:
    """The accessibility tree in OSWorld's XML format, and whether a bound cut it short
    (``cut`` names the bounds: nodes, size, time, depth, width, text, value)."""

    kind: ClassVar[str] = "accessibility_tree"

    xml: str
    truncated: bool = False
    cut: tuple[str, ...] = ()
    nodes: int = 0  # how many nodes the reader wrote

    def to_json(self) -> str:
        """The wire form: the XML, as OSWorld's ``obs["accessibility_tree"]``."""
        return self.xml


@dataclass(frozen=True)
class EnvironmentState:
    """What a policy may know about an environment: its generation and programs."""

    kind: ClassVar[str] = "state"

    env: str
    generation: int
    canary: bool
    programs: tuple[str, ...]
    screen: ScreenSize

    def to_json(self) -> dict[str, Any]:
        """The wire form."""
        return {
            "env": self.env,
            "generation": self.generation,
            "canary": self.canary,
            "programs": list(self.programs),
            "screen": {"width": self.screen.width, "height": self.screen.height},
        }


Observation = (
    Screenshot | WindowList | FocusedText | Clipboard | AccessibilityTree | EnvironmentState
)
Obs = TypeVar("Obs", bound=Observation)
# An observation's wire form (`to_json`): PNG bytes, XML text, or JSON.
Wire = bytes | str | dict[str, Any] | list[dict[str, Any]]
# Every observation by its name on the wire, in the order the docs list them.
OBSERVATIONS: dict[str, type[Observation]] = {
    o.kind: o
    for o in (Screenshot, WindowList, FocusedText, Clipboard, AccessibilityTree, EnvironmentState)
}


@dataclass(frozen=True)
class ActResult:
    """What an applied action returned (only reading the clipboard returns a value)."""

    env: str
    generation: int
    kind: str
    value: str | None = None


@dataclass(frozen=True)
class ActionRecord:
    """One line of the action log."""

    at: float
    env: str
    generation: int  # the generation the action aimed at
    current: int  # the environment's generation when the action arrived
    kind: str
    outcome: str  # applied, refused-stale, refused-canary, refused-busy, rejected, failed
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


def read_action_log(path: Path) -> list[ActionRecord]:
    """Every record of an action log, in order."""
    if not path.exists():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            out.append(ActionRecord(**json.loads(line)))
    return out


# -- capabilities ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Capabilities:
    """What a provider can do, declared up front (a run checks them with `require`)."""

    # Leaky setups: one protection removed between env01 and env02 on purpose.
    leaky_setups: bool
    # A warm spare per acting environment, swapped in at a reset.
    warm_standby: bool
    # The accessibility tree and the focused text, read from the environment's own bus.
    accessibility: bool
    # Commands run in the environment, as its user, where its programs run.
    commands: bool
    # URLs opened in the environment's browser.
    open_url: bool
    # Real X displays, programs and processes: the isolation checks' trials need them.
    real_desktops: bool
    # Each environment's programs in a container of their own.
    containers: bool = False

    def missing(self, needs: Needs) -> list[str]:
        """The capabilities ``needs`` asks for that this provider lacks, by name."""
        return [
            f.name for f in fields(needs) if getattr(needs, f.name) and not getattr(self, f.name)
        ]


@dataclass(frozen=True)
class Needs:
    """What a run will ask of a provider (each field as in `Capabilities`)."""

    leaky_setups: bool = False
    warm_standby: bool = False
    accessibility: bool = False
    commands: bool = False
    open_url: bool = False
    real_desktops: bool = False


# How each capability is said to a user who asked for it.
_SAID = {
    "leaky_setups": "leaky setups (they run on the host pool only, not with --containers)",
    "warm_standby": "warm standby",
    "accessibility": "the accessibility tree and the focused text",
    "commands": "commands run inside an environment",
    "open_url": "opening URLs in the browser",
    "real_desktops": "real displays, programs and processes",
}


class Unsupported(PoolError, ValueError):
    """A run asked a provider for something it declared it cannot do; said before the
    run starts. ``missing`` names the capabilities (`Capabilities` fields)."""

    def __init__(self, provider: str, missing: list[str]) -> None:
        self.provider = provider
        self.missing = missing
        said = "; ".join(_SAID.get(m, m) for m in missing)
        super().__init__(f"the {provider} provider cannot do what this run needs: {said}")


def require(provider: str, capabilities: Capabilities, needs: Needs) -> None:
    """Raise `Unsupported` unless ``capabilities`` cover ``needs``."""
    missing = capabilities.missing(needs)
    if missing:
        raise Unsupported(provider, missing)


# -- the two halves --------------------------------------------------------------------------


class DesktopProvider(Protocol):
    """The lifecycle of a pool of environments: the canary ``env00`` and ``env01``…"""

    # Called with an environment's name just before a reset or recovery wipes it.
    before_wipe: list[Callable[[str], None]]
    # Called with (environment, new generation, why) whenever a generation is raised.
    on_generation: list[Callable[[str, int, str], None]]

    @property
    def provider(self) -> str:
        """The provider's name (``sandbox``, ``containers``, ``memory``)."""
        ...

    @property
    def capabilities(self) -> Capabilities: ...

    @property
    def names(self) -> list[str]:
        """Every environment, the canary first."""
        ...

    @property
    def leak(self) -> Leak | None:
        """The leaky setup this pool runs (None: the isolated pool)."""
        ...

    @property
    def run_dir(self) -> Path:
        """The run folder: the environments' logs and the action log are kept there."""
        ...

    @property
    def action_log(self) -> Path:
        """The JSON-lines log of every action, applied or refused (`pool.generations`)."""
        ...

    def start(self) -> None: ...
    def stop(self) -> None: ...
    def generation(self, name: str) -> int: ...
    def lock(self, name: str) -> threading.RLock: ...

    def reset(self, name: str, generation: int | None = None, *, why: str = "reset") -> int:
        """A new generation with a fresh home, clipboard and programs; returned once ready."""
        ...

    def policy_reset(self, name: str, generation: int) -> int: ...
    def recover(self, name: str, why: str, left_by: Breakage | None = None) -> int: ...
    def standby_ready(self, name: str, timeout_s: float = 60.0) -> bool: ...
    def limits_for(self, name: str) -> SandboxLimits: ...
    def health(self, name: str) -> list[Problem]:
        """Every part of the environment found dead right now (empty: healthy)."""
        ...

    def breakage(self, name: str) -> Breakage | None: ...
    def inject_fault(self, name: str, what: str) -> None: ...

    def ready_since(self, name: str) -> float | None:
        """When the environment's current generation became ready (None: not yet)."""
        ...

    def kill(self, name: str, scope: Kill, why: str) -> None:
        """End ``scope`` of the environment as a crash would, said first as the harness's
        own doing (`inject_fault`): a check's fault, or a control's."""
        ...

    def without_generation_check(self) -> AbstractContextManager[None]:
        """Within the block stale actions are applied: a deliberate fault of the
        provider's own, the only leaky control of the stale-generation check."""
        ...

    def places(self, name: str) -> Places:
        """Where the environment's state lives on the harness's host (for the sweeps)."""
        ...

    def harness_act(self, name: str, action: Action) -> str | None:
        """An action of the harness's own, at whatever generation is current and on the
        canary too (its controls wire a change in on purpose); what it reads, if anything."""
        ...

    def write_home_file(self, name: str, relative: str, data: bytes) -> Path:
        """A file planted beneath the environment's home, owned by its user (a control's
        plant); the path it was written to on the host."""
        ...

    def describe(self) -> dict[str, Any]:
        """Every environment's status, for people (``cleanroom envs status``); nothing
        decides on it."""
        ...


class DesktopController(Protocol):
    """Acting on and observing one environment at a time, aimed at a generation."""

    def act(self, name: str, generation: int, action: Action) -> ActResult: ...

    def observe(self, name: str, generation: int, kind: type[Obs]) -> Obs:
        """One observation of kind ``kind`` (`Screenshot`, `WindowList`, ...)."""
        ...

    def processes(self, name: str) -> list[ProcessInfo]:
        """Its display server first, then its programs."""
        ...

    def screen_size(self, name: str) -> ScreenSize: ...
    def python(self, name: str) -> str:
        """The environment's own Python interpreter, for `run_inside`."""
        ...

    def read_selection(self, name: str, selection: str = "CLIPBOARD") -> ClipboardRead:
        """A selection as any client of the environment's display reads it, outside the
        gate (the harness's sweeps read it at any generation)."""
        ...

    def displayed_windows(self, name: str) -> list[DisplayedWindow]:
        """Every mapped top-level window the environment's display shows now, each with
        its owner; empty when the display cannot be read."""
        ...

    def tree_items(self, name: str) -> list[TreeItem]:
        """Every text object the environment's accessibility tree shows now, each with its
        owner; `PoolError` when the tree cannot be read."""
        ...

    def pixels(self, name: str) -> Pixels:
        """The screen as the harness sees it, raw, outside the gate."""
        ...

    def release_keys(self, name: str) -> None:
        """Release every key and button the harness holds down there."""
        ...

    def stat_home_file(self, name: str, relative: str) -> FileStat | None:
        """A file beneath the environment's home as looked at, never through a link;
        None when nothing is there."""
        ...

    def read_home_file(self, name: str, relative: str, limit: int) -> bytes | None:
        """A file beneath the environment's home, read no-follow and non-blocking; None
        when no regular file of at most ``limit`` bytes is there (never a part of one)."""
        ...

    def run_inside(self, name: str, argv: list[str], timeout_s: float = 60.0) -> CommandResult:
        """``argv`` run where the environment's programs run, as its user; its output is
        kept up to a cap (what a process inside writes is never held whole)."""
        ...

    def start_inside(self, name: str, argv: list[str], log_name: str) -> tuple[Started, Path]:
        """``argv`` started where the environment's programs run, as its user, its output
        in a log file of its own in the run folder; the command and that file."""
        ...

    def end_inside(self, name: str, started: Started, grace_s: float = 5.0) -> None:
        """End a command `start_inside` started, and everything it started (SIGTERM, then
        SIGKILL after ``grace_s``)."""
        ...

    def open_url(self, name: str, url: str) -> None: ...


class Desktops(DesktopProvider, DesktopController, Protocol):
    """A pool of desktops, both halves: what everything outside ``environments`` holds."""


def status_of(desktops: Desktops, name: str) -> dict[str, Any]:
    """One environment's status as its provider describes it (for people, and for a guest
    that runs commands in it from another process)."""
    for env in desktops.describe()["environments"]:
        if env["name"] == name:
            return dict(env)
    raise UnknownEnvironment(f"no environment named {name!r}")
