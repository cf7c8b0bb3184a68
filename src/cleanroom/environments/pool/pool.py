"""The pool: the canary ``env00`` plus ``env01``…``envNN``, their generations and actions.

All effects on environments go through here. Every action and observation names the
environment and the generation it aims at; a stale one is refused and logged, never
applied. Reset and crash recovery raise the generation before they touch anything, so an
action that arrives while they run is refused once they finish.
"""

from __future__ import annotations

import contextlib
import dataclasses
import secrets
import shutil
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cleanroom.core.breakage import Breakage, judge
from cleanroom.core.canary import CANARY_ENV
from cleanroom.environments.containers.desktop_image import ensure_image
from cleanroom.environments.containers.program_container import plan_for
from cleanroom.environments.errors import (
    BadAction,
    CanaryIsReadOnly,
    EnvironmentBroken,
    NoSuchWindow,
    PoolError,
    StaleGeneration,
    StartError,
    UnknownEnvironment,
)
from cleanroom.environments.leaky_setups import (
    DONOR,
    TAKER,
    Leak,
    Sharing,
    donor_gives,
    sharing_for,
)
from cleanroom.environments.policy.actions import (
    Action,
    Click,
    Focus,
    GetClipboard,
    Hotkey,
    KeyDown,
    KeyUp,
    Move,
    SetClipboard,
    TypeText,
)
from cleanroom.environments.pool.environment import Borrowed, DesktopEnvironment, EnvSpec
from cleanroom.environments.pool.generations import ACTION_LOG, ActionLog, GenerationBook
from cleanroom.environments.pool.pool_record import PoolRecord, remove_record, write_record
from cleanroom.environments.pool.standby import Standby, retire
from cleanroom.environments.session.accounts import unmount_beneath
from cleanroom.environments.session.cgroups import (
    EnvironmentsGroup,
    prepare_environments_group,
    protect_harness,
)
from cleanroom.environments.session.programs import DEFAULT_PROGRAMS, check_programs
from cleanroom.environments.session.sandbox_spec import SandboxLimits, SandboxProtections
from cleanroom.environments.session.template import (
    LIBREOFFICE_PROFILE,
    build_template,
    warm_libreoffice_profile,
)
from cleanroom.environments.x11.clipboard import SELECTIONS
from cleanroom.environments.x11.clipboard_bridge import ClipboardBridge
from cleanroom.environments.x11.display import ScreenSize
from cleanroom.store.folders import private_folder
from cleanroom.store.rundb import RunStore

DEFAULT_ROOT = Path("/var/lib/cleanroom/pools")
CANARY_CPU_SHARES = 2048
OBSERVATIONS = (
    "screenshot",
    "windows",
    "focused_text",
    "clipboard",
    "accessibility_tree",
    "state",
)
# How long a failed action waits for the part of the environment it needed to be seen dead.
FAILURE_SETTLE_S = 2.0


def env_name(index: int) -> str:
    """``env00``, ``env01``, …"""
    return f"env{index:02d}"


# The second slot of an environment with warm standby: its user, home, runtime folder
# and container are named with this after the environment's name.
STANDBY_SLOT = "b"


@dataclass(frozen=True)
class PoolConfig:
    """How many environments, which programs each runs, and where their files live."""

    envs: int = 3
    programs: tuple[str, ...] = DEFAULT_PROGRAMS
    canary_programs: tuple[str, ...] = ("writer",)
    screen: ScreenSize = field(default_factory=ScreenSize)
    root: Path = DEFAULT_ROOT
    programs_by_env: dict[str, tuple[str, ...]] = field(default_factory=dict)
    containers: bool = False  # each environment's programs in a Docker container of its own
    # A leaky setup: one protection removed between env01 and env02 on purpose (the
    # per-test positive controls); None is the isolated pool.
    leak: Leak | None = None
    # Every acting environment keeps a second slot up in the background, so that a reset
    # or a recovery swaps it in instead of starting the programs again (see `standby`).
    warm_standby: bool = False
    # What each environment's sandbox may take of the machine (its cgroup, its tmpfs
    # mounts); the canary's CPU weight is `CANARY_CPU_SHARES`, above everyone's.
    limits: SandboxLimits = field(default_factory=SandboxLimits)
    # What of the machine's memory the environments together leave to the harness: their
    # common cgroup (`cgroups.ENVIRONMENTS`) may take the rest, no more.
    harness_reserve_mib: int = 2048

    def __post_init__(self) -> None:
        if not 1 <= self.envs <= 32:
            raise ValueError(f"between 1 and 32 environments besides the canary, got {self.envs}")
        if self.leak is not None:
            object.__setattr__(self, "leak", Leak(self.leak))
            if self.envs < 2:
                raise ValueError("a leaky setup needs at least two environments (env01, env02)")
            if self.containers:
                # Each leak borrows a host resource (display, home, bus, profile) that a
                # program container cannot reach: the leak would not be the one named.
                raise ValueError("leaky setups run on the host pool only, not with --containers")
        check_programs(self.programs)
        check_programs(self.canary_programs)
        for names in self.programs_by_env.values():
            check_programs(names)

    def programs_for(self, name: str) -> tuple[str, ...]:
        """The programs one environment starts."""
        if name in self.programs_by_env:
            return self.programs_by_env[name]
        return self.canary_programs if name == CANARY_ENV else self.programs


@dataclass(frozen=True)
class ActResult:
    """What an applied action returned (only `get_clipboard` returns a value)."""

    env: str
    generation: int
    kind: str
    value: Any = None


class Pool:
    """Environments, generations and the action log of one run. Use `start` and `stop`."""

    def __init__(self, config: PoolConfig, run_dir: Path, store: RunStore | None = None) -> None:
        self.config = config
        self.run_dir = run_dir
        self.store = store
        self.pool_id = secrets.token_hex(3)
        self.root = config.root / self.pool_id
        self.envs: dict[str, DesktopEnvironment] = {}
        self.book = GenerationBook()
        # Called with an environment's name just before a reset or recovery wipes its home
        # and clipboard (the harness sweeps them for foreign tokens there).
        self.before_wipe: list[Callable[[str], None]] = []
        self.log = ActionLog(run_dir / ACTION_LOG)
        self._locks: dict[str, threading.RLock] = {}
        self.on_generation: list[Callable[[str, int, str], None]] = []
        self.image: str | None = None  # the desktop image, in containers mode
        self.bridge: ClipboardBridge | None = None
        self.standby: Standby | None = None
        self.group: EnvironmentsGroup | None = None  # set by `start`
        # Faults the harness injected into an environment (a test's kill), until its
        # next generation: what breaks then is never the agent's doing.
        self._injected: dict[str, str] = {}

    # -- life cycle ----------------------------------------------------------------------

    @property
    def names(self) -> list[str]:
        """Every environment, the canary first."""
        return sorted(self.envs)

    @property
    def template(self) -> Path:
        return self.root / "template"

    def _spec(self, name: str, slot: str = "") -> EnvSpec:
        gives = donor_gives(self.config.leak) if name in (DONOR, TAKER) else Sharing()
        folder = f"{name}.{slot}" if slot else name
        return EnvSpec(
            name=name,
            user=f"cr{self.pool_id}{name}{slot}",
            home=self.root / "homes" / folder,
            runtime_dir=self.root / "run" / folder,
            log_dir=self.run_dir / "logs" / name,
            programs=self.config.programs_for(name),
            screen=self.config.screen,
            container=plan_for(self.pool_id, name, self.image, slot) if self.image else None,
            sandboxed=not gives.unsandboxed,
            # The open host had its displays' servers there too.
            display_sandboxed=not (gives.unsandboxed or gives.x_outside),
            protections=SandboxProtections(
                syscall_filter=not gives.unfiltered,
                own_inodes=not gives.shared_inodes,
                limits=None if gives.unlimited else self.limits_for(name),
            ),
        )

    def limits_for(self, name: str) -> SandboxLimits:
        """What environment ``name`` may take (the canary weighs more)."""
        if name != CANARY_ENV:
            return self.config.limits
        # The canary's looks are timed against a tolerance: it weighs more than the
        # harness and every environment, so a busy one cannot make it miss a look.
        return dataclasses.replace(self.config.limits, cpu_shares=CANARY_CPU_SHARES)

    def _has_standby(self, name: str) -> bool:
        # Not the canary (never reset), nor the two ends of a leaky setup: they share a
        # display, home, bus or profile with each other, which a slot of their own lacks.
        if not self.config.warm_standby or name == CANARY_ENV:
            return False
        return self.config.leak is None or name not in (DONOR, TAKER)

    def _standby_names(self) -> list[str]:
        return [n for i in range(self.config.envs + 1) if self._has_standby(n := env_name(i))]

    def start(self) -> None:
        """Create every environment and return when all are ready; on failure undo all."""
        private_folder(self.run_dir)
        self.group = prepare_environments_group(self.config.harness_reserve_mib)
        protect_harness()
        # Recorded before anything exists, so a pool whose owner dies can be removed later.
        write_record(self._record())
        (self.root / "homes").mkdir(parents=True, mode=0o755)
        (self.root / "run").mkdir(parents=True, mode=0o755)
        if self.config.leak is Leak.OPEN_HOST:
            self.run_dir.chmod(0o755)  # the open host also let anyone read the run folder
        self.root.chmod(0o755)
        try:
            if self.config.containers:
                self.image = ensure_image()
            build_template(self.template)
            writer = any(
                "writer" in self.config.programs_for(env_name(i))
                for i in range(self.config.envs + 1)
            )
            if self.config.leak is None:
                self._start_side_by_side(writer)
            else:
                self._start_one_by_one(writer)
            if sharing_for(self.config.leak, TAKER).clipboard_bridge:
                self.bridge = ClipboardBridge(
                    [self._display_name(DONOR), self._display_name(TAKER)]
                )
            self._start_standby()
        except BaseException:
            self.stop()
            raise
        if self.store is not None:
            for name, env in sorted(self.envs.items()):
                d = env.describe()
                self.store.add_environment(
                    name, unix_user=d["user"], display=d["display"], generation=0, meta=d
                )

    def _start_side_by_side(self, writer: bool) -> None:
        # An isolated pool's environments share nothing, so everything that waits starts
        # at once: the profile is warmed while the accounts and desktops come up (neither
        # needs it), then every home is filled from the template and every program starts.
        names = [env_name(i) for i in range(self.config.envs + 1)]
        with ThreadPoolExecutor(max_workers=len(names) + 1, thread_name_prefix="start") as ex:
            warm = ex.submit(warm_libreoffice_profile, self.template) if writer else None
            desktops = [(n, ex.submit(self._bare_desktop, n)) for n in names]
            failure: BaseException | None = None
            for name, started in desktops:  # every one that started is kept, to be stopped
                try:
                    self._add(name, started.result())
                except BaseException as exc:
                    failure = failure or exc
            if warm is not None:
                warm.result()
            if failure is not None:
                raise failure
            list(ex.map(lambda e: (e.restore_home(), e.start_programs()), self.envs.values()))

    def _bare_desktop(self, name: str) -> DesktopEnvironment:
        env = DesktopEnvironment.create(self._spec(name), self.template, fill_home=False)
        try:
            env.start_desktop()
        except BaseException:
            env.destroy()
            raise
        return env

    def _start_one_by_one(self, writer: bool) -> None:
        # A leaky pool's taker borrows from the donor, which must exist first.
        if writer:
            warm_libreoffice_profile(self.template)
        for i in range(self.config.envs + 1):
            name = env_name(i)
            env = self._create(name)
            self._add(name, env)
            env.start_desktop()
        # Programs start in parallel: most of their start-up is waiting for windows.
        # A taker that shares the donor's profile, display or home starts after it:
        # its Writer then finds the donor's running instance (the trap that leak
        # reproduces), a display whose AT-SPI bus the donor already published, or
        # the shared document already open (which it opens without locking).
        taker = sharing_for(self.config.leak, TAKER)
        later = [self.envs[TAKER]] if taker.profile or taker.display or taker.home else []
        first = [e for e in self.envs.values() if e not in later]
        with ThreadPoolExecutor(max_workers=len(first)) as ex:
            list(ex.map(lambda e: e.start_programs(), first))
        for env in later:
            env.start_programs()

    def _add(self, name: str, env: DesktopEnvironment) -> None:
        self.envs[name] = env
        self._locks[name] = threading.RLock()
        self.book.add(name)

    def _start_standby(self) -> None:
        # The spares come up in the background: the pool is ready without waiting.
        names = self._standby_names()
        if not names:
            return
        self.standby = Standby()
        for name in names:  # bringing a slot up fills its home, so it starts empty
            spec = self._spec(name, STANDBY_SLOT)
            slot = DesktopEnvironment.create(spec, self.template, fill_home=False)
            self.standby.bring_up(name, slot)

    def standby_ready(self, name: str, timeout_s: float = 60.0) -> bool:
        """Wait until ``name``'s spare slot is up; False without warm standby, or when it
        failed or took longer than ``timeout_s``."""
        return self.standby is not None and self.standby.wait_ready(name, timeout_s)

    def _create(self, name: str) -> DesktopEnvironment:
        spec = self._spec(name)
        sharing = sharing_for(self.config.leak, name)
        if not sharing.any:
            return DesktopEnvironment.create(spec, self.template)
        donor = self.envs[DONOR]
        account = None
        if sharing.account:
            home = donor.account.home if sharing.home else spec.home
            account = donor.account.lend(home)
        env = DesktopEnvironment.create(spec, self.template, account=account)
        profile = None
        if sharing.profile:
            profile = donor.account.home / LIBREOFFICE_PROFILE
        elif sharing.home:
            profile = env.account.home / f"{LIBREOFFICE_PROFILE}-{name}"
        env.borrow = Borrowed(
            donor, display=sharing.display, session=sharing.runtime_dir, libreoffice_profile=profile
        )
        return env

    def _display_name(self, name: str) -> str:
        display = self.env(name).display
        if display is None:
            raise StartError(f"{name}: the desktop is not running")
        return display.name

    def stop(self) -> None:
        """Stop every environment, remove its user and home, and the pool's files."""
        if self.bridge is not None:
            self.bridge.close()
            self.bridge = None
        if self.standby is not None:
            for slot in self.standby.close():
                with contextlib.suppress(Exception):
                    slot.destroy()
            self.standby = None
        # Last first: an environment that borrows from env01 goes before env01 does.
        for name in sorted(self.envs, reverse=True):
            env = self.envs.pop(name)
            with contextlib.suppress(Exception):
                env.destroy()
        unmount_beneath(self.root)  # any home an environment that failed to end left
        shutil.rmtree(self.root, ignore_errors=True)
        remove_record(self.pool_id)
        with contextlib.suppress(Exception):
            self.log.close()

    def _record(self) -> PoolRecord:
        from cleanroom.environments.x11.xauth import harness_authority

        return PoolRecord.for_this_process(
            self.pool_id,
            self.root,
            self.run_dir,
            [self._spec(env_name(i)).user for i in range(self.config.envs + 1)]
            + [self._spec(n, STANDBY_SLOT).user for n in self._standby_names()],
            containers=self.config.containers,
            harness_authority=str(harness_authority()),
        )

    def env(self, name: str) -> DesktopEnvironment:
        """The environment object (harness use only: policies go through `act`)."""
        try:
            return self.envs[name]
        except KeyError:
            raise UnknownEnvironment(f"no environment named {name!r}") from None

    def lock(self, name: str) -> threading.RLock:
        """The environment's lock: held while an action, reset or recovery runs."""
        self.env(name)
        return self._locks[name]

    # -- generations ---------------------------------------------------------------------

    def generation(self, name: str) -> int:
        """The environment's current generation."""
        return self.book.current(name)

    def _checked(self, name: str, generation: int, kind: str) -> DesktopEnvironment:
        """The environment, if ``generation`` is current; otherwise log and refuse."""
        env = self.env(name)
        try:
            self.book.check(name, generation)
        except StaleGeneration as exc:
            self.log.write(name, generation, exc.current, kind, "refused-stale")
            raise
        return env

    def _new_generation(self, name: str, why: str, left_by: Breakage | None = None) -> int:
        generation = self.book.raise_(name, left_by)
        self._injected.pop(name, None)
        if self.store is not None:
            self.store.set_generation(name, generation)
        for hook in self.on_generation:
            hook(name, generation, why)
        return generation

    # -- who broke an environment -------------------------------------------------------

    def inject_fault(self, name: str, what: str) -> None:
        """Say, before the harness breaks an environment itself (a test's kill), that
        what breaks in it until its next generation is the harness's doing."""
        self.env(name)
        self._injected[name] = what

    def breakage(self, name: str) -> Breakage | None:
        """Who broke the environment, judged from what is dead in it now (None: nothing)."""
        return judge(self.env(name).evidence(self._injected.get(name)))

    def _broken(self, name: str, settle_s: float) -> Breakage | None:
        """`breakage`, looked at again for up to ``settle_s``: a program that closed its
        window is still ending when the action that needed the window fails."""
        deadline = time.monotonic() + settle_s
        while True:
            found = self.breakage(name)
            if found is not None or time.monotonic() >= deadline:
                return found
            time.sleep(0.1)

    def _failed(self, name: str, generation: int, kind: str, exc: Exception) -> PoolError:
        """What a failed action or observation raises: `EnvironmentBroken` when part of
        the environment is dead (with who broke it), else the pool's own error.

        A named failure of the pool's own says what it is, so the environment is looked
        at once; anything else (the X connection, a reader) or a window that is gone may
        be a part of the environment on its way out, so it is looked at again for a
        moment. A window that is gone from a whole environment is the agent's mistake:
        `NoSuchWindow` is logged as rejected and raised as it is."""
        settle = isinstance(exc, NoSuchWindow) or not isinstance(exc, PoolError)
        broken = self._broken(name, FAILURE_SETTLE_S if settle else 0.0)
        if broken is None and isinstance(exc, NoSuchWindow):
            self.log.write(name, generation, generation, kind, "rejected", str(exc))
            return exc
        self.log.write(name, generation, generation, kind, "failed", repr(exc))
        if broken is not None:
            return EnvironmentBroken(name, generation, broken)
        if isinstance(exc, PoolError):
            return exc
        return PoolError(f"{name}: {kind} failed: {exc}")

    # -- acting --------------------------------------------------------------------------

    def act(self, name: str, generation: int, action: Action) -> ActResult:
        """Apply one action if its generation is current; refuse (and log) otherwise."""
        if name == CANARY_ENV:
            self.log.write(name, generation, self.book.current(name), action.kind, "refused-canary")
            raise CanaryIsReadOnly(f"{CANARY_ENV} is the canary and never receives an action")
        self.env(name)
        with self._locks[name]:
            env = self._checked(name, generation, action.kind)
            try:
                value = self._apply(env, action)
            except NoSuchWindow as exc:  # the agent's mistake, or its program just ended
                failure = self._failed(name, generation, action.kind, exc)
                if failure is exc:
                    raise
                raise failure from exc
            except BadAction as exc:
                self.log.write(name, generation, generation, action.kind, "rejected", str(exc))
                raise
            except Exception as exc:
                raise self._failed(name, generation, action.kind, exc) from exc
            self.log.write(name, generation, generation, action.kind, "applied")
        return ActResult(name, generation, action.kind, value)

    def _apply(self, env: DesktopEnvironment, action: Action) -> Any:
        xin = env.input
        if xin is None or env.clipboard is None:
            raise StartError(f"{env.name}: the desktop is not running")
        if isinstance(action, TypeText):
            xin.type_text(action.text)
        elif isinstance(action, KeyDown):
            xin.key_down(action.key)
        elif isinstance(action, KeyUp):
            xin.key_up(action.key)
        elif isinstance(action, Hotkey):
            xin.hotkey(action.keys)
        elif isinstance(action, Click):
            xin.click(action.x, action.y, action.button, action.count)
        elif isinstance(action, Move):
            xin.move(action.x, action.y)
        elif isinstance(action, Focus):
            window_id = action.window_id
            if action.program is not None:
                window = env.window_of(action.program)
                if window is None:
                    raise NoSuchWindow(f"{env.name} shows no {action.program} window")
                window_id = window.id
            assert window_id is not None
            xin.focus(window_id)
        elif isinstance(action, SetClipboard):
            env.clipboard.set(action.text, action.selections)
        elif isinstance(action, GetClipboard):
            return env.read_clipboard(action.selection).text
        else:
            raise BadAction(f"unknown action {action.kind!r}")
        return None

    # -- observing -----------------------------------------------------------------------

    def observe(self, name: str, generation: int, what: str) -> Any:
        """One observation (screenshot PNG bytes, window list, focused text, clipboard,
        accessibility tree XML, state).

        Observing the canary is allowed: it changes nothing.
        """
        if what not in OBSERVATIONS:
            raise BadAction(f"unknown observation {what!r}; use {', '.join(OBSERVATIONS)}")
        env = self.env(name)
        with self._locks[name]:
            env = self._checked(name, generation, f"observe:{what}")
            try:
                return self._observe(env, what)
            except BadAction:
                raise
            except Exception as exc:
                raise self._failed(name, generation, f"observe:{what}", exc) from exc

    def _observe(self, env: DesktopEnvironment, what: str) -> Any:
        if what == "screenshot":
            return env.screenshot_png()
        if what == "windows":
            return [w.to_json() for w in env.windows()]
        if what == "focused_text":
            return env.focused_text().to_json()
        if what == "clipboard":
            return {s: env.read_clipboard(s).text for s in SELECTIONS}
        if what == "accessibility_tree":
            return env.accessibility_tree()
        return self.state(env.name)

    def state(self, name: str) -> dict[str, Any]:
        """What a policy may know about an environment: its generation and programs."""
        env = self.env(name)
        return {
            "env": name,
            "generation": self.book.current(name),
            "canary": name == CANARY_ENV,
            "programs": [p.name for p in env.programs],
            "screen": {"width": env.spec.screen.width, "height": env.spec.screen.height},
        }

    # -- reset and recovery --------------------------------------------------------------

    def reset(self, name: str, generation: int | None = None, *, why: str = "reset") -> int:
        """Kill the environment's programs, restore its home, clear its clipboard, raise
        its generation and restart its programs; return the new generation once ready.

        With ``generation`` given, a stale one is refused like any action.
        """
        self.env(name)
        if generation is not None:
            self._checked(name, generation, "reset")
        self._wiping(name)
        before = self.book.current(name)
        new = self._new_generation(name, why)
        with self._locks[name]:
            env = self.env(name)
            self.log.write(name, before, new, "reset", "applied", why)
            if self._swap_in_spare(name):
                return new
            if env.problems() and (env.display is None or not env.display.alive()):
                self._rebuild(env)
            else:
                env.restart_session()
                env.restore_home()
                env.clear_clipboard()
                env.start_programs()
        return new

    def policy_reset(self, name: str, generation: int) -> int:
        """A reset a policy asked for: refused on the canary, stale generations refused."""
        if name == CANARY_ENV:
            self.log.write(name, generation, self.book.current(name), "reset", "refused-canary")
            raise CanaryIsReadOnly(f"{CANARY_ENV} is the canary and is never reset by a policy")
        return self.reset(name, generation, why="policy reset")

    def open_url(self, name: str, url: str) -> None:
        """Open a URL in the environment's browser (a harness setup step, not an action)."""
        env = self.env(name)
        with self._locks[name]:
            env.open_url(url)
        self.log.write(
            name, self.book.current(name), self.book.current(name), "open_url", "applied", url
        )

    def recover(self, name: str, why: str, left_by: Breakage | None = None) -> int:
        """Bring a crashed environment back at a new generation (the watchdog's remedy);
        ``left_by`` is who broke the generation it leaves (`breakage`), which an action
        still aimed at it is told (`StaleGeneration.left_by`)."""
        self._wiping(name)
        before = self.book.current(name)
        new = self._new_generation(name, f"recover: {why}", left_by)
        with self._locks[name]:
            env = self.env(name)
            self.log.write(name, before, new, "recover", "applied", why)
            if not self._swap_in_spare(name):
                self._rebuild(env)
        return new

    def _swap_in_spare(self, name: str) -> bool:
        """Make ``name``'s spare slot the environment, end every process of the slot it
        replaces, and bring that one up again in the background; False (nothing done)
        when there is no usable spare. The caller holds the lock and raised the
        generation."""
        if self.standby is None:
            return False
        spare = self.standby.take(name)
        if spare is None:
            return False
        old = self.envs[name]
        spare.ready_at = time.time()  # ready as this environment from now on
        self.envs[name] = spare
        try:
            retire(old)  # before the reset returns, nothing of the old generation runs
        finally:
            self.standby.bring_up(name, old)
        if self.store is not None:
            d = spare.describe()
            self.store.move_environment(name, unix_user=d["user"], display=d["display"])
        return True

    def _wiping(self, name: str) -> None:
        for hook in list(self.before_wipe):
            hook(name)

    def _rebuild(self, env: DesktopEnvironment) -> None:
        env.stop_desktop()
        env.restore_home()
        env.start_desktop()
        env.start_programs()

    def describe(self) -> dict[str, Any]:
        """Every environment's status, for ``cleanroom envs status``."""
        out = []
        for name in self.names:
            d = self.env(name).describe()
            d["generation"] = self.book.current(name)
            d["healthy"] = not d["problems"]
            d["standby"] = self.standby.state(name) if self.standby is not None else "none"
            out.append(d)
        return {
            "pool_id": self.pool_id,
            "run_dir": str(self.run_dir),
            "leak": self.config.leak.value if self.config.leak else None,
            # The environments' cgroup: its memory budget, weight, and what could not be set.
            "environments_group": self.group.describe() if self.group else None,
            "environments": out,
        }
