"""The lifecycle of a pool's environments: made and started (side by side when they share
nothing, one by one when a leaky setup makes one borrow from another), reset in place or
by swapping in a warm spare, rebuilt after a crash, and removed.

The pool (`pool.Pool`) decides when; this does it. Generations are the gate's
(`gate.Gate`): a caller raises the generation before it asks for a reset or a rebuild.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from cleanroom.core.breakage import Part
from cleanroom.environments.containers.desktop_image import ensure_image
from cleanroom.environments.leaky_setups import DONOR, TAKER, Leak, sharing_for
from cleanroom.environments.pool.environment import Borrowed, DesktopEnvironment
from cleanroom.environments.pool.gate import Gate
from cleanroom.environments.pool.plan import STANDBY_SLOT, PoolPlan
from cleanroom.environments.pool.pool_record import PoolRecord, remove_record, write_record
from cleanroom.environments.pool.standby import Standby, retire
from cleanroom.environments.session.accounts import unmount_beneath
from cleanroom.environments.session.cgroups import (
    EnvironmentsGroup,
    prepare_environments_group,
    protect_harness,
)
from cleanroom.environments.session.template import (
    LIBREOFFICE_PROFILE,
    build_template,
    warm_libreoffice_profile,
)
from cleanroom.environments.x11.clipboard_bridge import ClipboardBridge
from cleanroom.store.folders import private_folder
from cleanroom.store.rundb import RunStore

# What a person waiting for the start sees (`cleanroom envs up` shows it on stderr).
PROGRESS = logging.getLogger("cleanroom.progress")
# What a reset in place cannot mend: the display, and the harness's connections to it
# (a reset keeps both), so the environment is rebuilt instead.
_REBUILT = frozenset(
    {Part.DISPLAY, Part.DISPLAY_STALLED, Part.HARNESS_CONNECTION, Part.DISPLAY_HELD}
)


class Lifecycle:
    """Makes, starts, resets, rebuilds and removes the environments of one plan."""

    def __init__(self, plan: PoolPlan, gate: Gate, store: RunStore | None) -> None:
        self.plan = plan
        self.gate = gate
        self.store = store
        self.envs: dict[str, DesktopEnvironment] = {}
        self.bridge: ClipboardBridge | None = None
        self.standby: Standby | None = None
        self.group: EnvironmentsGroup | None = None
        self._said = threading.Lock()

    def start(self) -> None:
        """Create every environment and return when all are ready; on failure undo all."""
        plan, config = self.plan, self.plan.config
        private_folder(plan.run_dir)
        self.group = prepare_environments_group(config.harness_reserve_mib)
        protect_harness()
        # Recorded before anything exists, so a pool whose owner dies can be removed later.
        write_record(self._record())
        (plan.root / "homes").mkdir(parents=True, mode=0o755)
        (plan.root / "run").mkdir(parents=True, mode=0o755)
        if config.leak is Leak.OPEN_HOST:
            plan.run_dir.chmod(0o755)  # the open host also let anyone read the run folder
        plan.root.chmod(0o755)
        PROGRESS.info("pool %s: starting %d environment(s)", plan.pool_id, len(plan.names))
        try:
            if config.containers:
                plan.image = ensure_image()
            build_template(plan.template)
            if config.leak is None:
                self._start_side_by_side(plan.runs_writer())
            else:
                self._start_one_by_one(plan.runs_writer())
            if sharing_for(config.leak, TAKER).clipboard_bridge:
                self.bridge = ClipboardBridge(
                    [self.envs[DONOR].live.display.name, self.envs[TAKER].live.display.name]
                )
            self._start_standby()
        except BaseException:
            PROGRESS.info("pool %s: the start failed; removing what it made", plan.pool_id)
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
        names = self.plan.names
        template = self.plan.template
        with ThreadPoolExecutor(max_workers=len(names) + 1, thread_name_prefix="start") as ex:
            warm = ex.submit(warm_libreoffice_profile, template) if writer else None
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
            PROGRESS.info("pool %s: every display is up; starting the programs", self.plan.pool_id)
            list(ex.map(self._fill_and_start, self.envs.values()))

    def _fill_and_start(self, env: DesktopEnvironment) -> None:
        env.restore_home()
        env.start_programs()
        self._said_ready(env)

    def _said_ready(self, env: DesktopEnvironment) -> None:
        with self._said:  # environments come up on threads of their own
            ready = sum(1 for e in self.envs.values() if e.ready_at is not None)
            PROGRESS.info("pool %s: %s ready (%d of %d)", self.plan.pool_id, env.name, ready,
                          len(self.plan.names))  # fmt: skip

    def _bare_desktop(self, name: str) -> DesktopEnvironment:
        env = DesktopEnvironment.create(self.plan.spec(name), self.plan.template, fill_home=False)
        try:
            env.start_desktop()
        except BaseException:
            env.destroy()
            raise
        return env

    def _start_one_by_one(self, writer: bool) -> None:
        # A leaky pool's taker borrows from the donor, which must exist first.
        if writer:
            warm_libreoffice_profile(self.plan.template)
        for name in self.plan.names:
            env = self._create(name)
            self._add(name, env)
            env.start_desktop()
        # Programs start in parallel: most of their start-up is waiting for windows.
        # A taker that shares the donor's profile, display or home starts after it:
        # its Writer then finds the donor's running instance (the trap that leak
        # reproduces), a display whose AT-SPI bus the donor already published, or
        # the shared document already open (which it opens without locking).
        taker = sharing_for(self.plan.config.leak, TAKER)
        later = [self.envs[TAKER]] if taker.profile or taker.display or taker.home else []
        first = [e for e in self.envs.values() if e not in later]
        with ThreadPoolExecutor(max_workers=len(first)) as ex:
            list(ex.map(self._start_programs, first))
        for env in later:
            self._start_programs(env)

    def _start_programs(self, env: DesktopEnvironment) -> None:
        env.start_programs()
        self._said_ready(env)

    def _create(self, name: str) -> DesktopEnvironment:
        spec = self.plan.spec(name)
        template = self.plan.template
        sharing = sharing_for(self.plan.config.leak, name)
        if not sharing.any:
            return DesktopEnvironment.create(spec, template)
        donor = self.envs[DONOR]
        account = None
        if sharing.account:
            home = donor.account.home if sharing.home else spec.home
            account = donor.account.lend(home)
        env = DesktopEnvironment.create(spec, template, account=account)
        profile = None
        if sharing.profile:
            profile = donor.account.home / LIBREOFFICE_PROFILE
        elif sharing.home:
            profile = env.account.home / f"{LIBREOFFICE_PROFILE}-{name}"
        env.borrow = Borrowed(
            donor, display=sharing.display, session=sharing.runtime_dir, libreoffice_profile=profile
        )
        return env

    def _add(self, name: str, env: DesktopEnvironment) -> None:
        self.envs[name] = env
        self.gate.add(name)

    def _start_standby(self) -> None:
        # The spares come up in the background: the pool is ready without waiting.
        names = self.plan.standby_names()
        if not names:
            return
        self.standby = Standby()
        for name in names:  # bringing a slot up fills its home, so it starts empty
            spec = self.plan.spec(name, STANDBY_SLOT)
            slot = DesktopEnvironment.create(spec, self.plan.template, fill_home=False)
            self.standby.bring_up(name, slot)

    def reset(self, env: DesktopEnvironment) -> None:
        """A fresh session, home, clipboard and programs, in place (a dead display, or one
        the harness's connections to are closed, is rebuilt); the caller holds the lock
        and raised the generation."""
        if any(p.part in _REBUILT for p in env.damage()):
            self.rebuild(env)
            return
        env.restart_session()
        env.restore_home()
        env.clear_clipboard()
        env.start_programs()

    def rebuild(self, env: DesktopEnvironment) -> None:
        """Everything of the environment started again, its display included."""
        env.stop_desktop()
        env.restore_home()
        env.start_desktop()
        env.start_programs()

    def swap_in_spare(self, name: str) -> bool:
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

    def describe(self, generation: Callable[[str], int]) -> dict[str, Any]:
        """Every environment's status, with its generation, for ``cleanroom envs status``."""
        out = []
        for name in sorted(self.envs):
            d = self.envs[name].describe()
            d["generation"] = generation(name)
            d["healthy"] = not d["problems"]
            d["standby"] = self.standby.state(name) if self.standby is not None else "none"
            out.append(d)
        config = self.plan.config
        return {
            "pool_id": self.plan.pool_id,
            "run_dir": str(self.plan.run_dir),
            "leak": config.leak.value if config.leak else None,
            # The environments' cgroup: its memory budget, weight, and what could not be set.
            "environments_group": self.group.describe() if self.group else None,
            "environments": out,
        }

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
        unmount_beneath(self.plan.root)  # any home an environment that failed to end left
        shutil.rmtree(self.plan.root, ignore_errors=True)
        remove_record(self.plan.pool_id)

    def _record(self) -> PoolRecord:
        from cleanroom.environments.x11.xauth import harness_authority

        return PoolRecord.for_this_process(
            self.plan.pool_id,
            self.plan.root,
            self.plan.run_dir,
            self.plan.users(),
            containers=self.plan.config.containers,
            harness_authority=str(harness_authority()),
        )
