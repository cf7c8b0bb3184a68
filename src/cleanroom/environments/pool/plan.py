"""A pool's plan: how many environments, what each is made of, which keep a warm spare,
what each may take of the machine, and what the pool's provider can do.

Pure planning over the configuration: nothing here starts or touches an environment.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from cleanroom.core.canary import CANARY_ENV
from cleanroom.environments.containers.program_container import plan_for
from cleanroom.environments.interface import (
    DEFAULT_PROGRAMS,
    Capabilities,
    Needs,
    SandboxLimits,
    ScreenSize,
    require,
)
from cleanroom.environments.leaky_setups import DONOR, TAKER, Leak, Sharing, donor_gives
from cleanroom.environments.pool.environment import EnvSpec
from cleanroom.environments.session.programs import check_programs
from cleanroom.environments.session.sandbox_spec import SandboxProtections, SandboxRuntime

DEFAULT_ROOT = Path("/var/lib/cleanroom/pools")
CANARY_CPU_SHARES = 2048
# The second slot of an environment with warm standby: its user, home, runtime folder
# and container are named with this after the environment's name.
STANDBY_SLOT = "b"

# What the two providers of the host pool can do. A leaky setup borrows a host resource
# (display, home, bus, profile) that a program container cannot reach: the leak would
# not be the one named, so containers mode declares none.
SANDBOX = Capabilities(
    leaky_setups=True,
    warm_standby=True,
    accessibility=True,
    commands=True,
    open_url=True,
    real_desktops=True,
)
CONTAINERS = dataclasses.replace(SANDBOX, leaky_setups=False, containers=True)
# gVisor's sandboxes have a network stack of their own inside their kernel, which the
# harness's port forwarders (made in the host kernel's namespaces) do not reach.
GVISOR = dataclasses.replace(SANDBOX, open_url=False)


def env_name(index: int) -> str:
    """``env00``, ``env01``, …"""
    return f"env{index:02d}"


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
    # Each environment's programs and display on a kernel of its own (gVisor's ``runsc``
    # runs the same sandbox spec), not namespaces of the host's one.
    gvisor: bool = False

    def __post_init__(self) -> None:
        if not 1 <= self.envs <= 32:
            raise ValueError(f"between 1 and 32 environments besides the canary, got {self.envs}")
        if self.gvisor and self.containers:
            raise ValueError("gVisor runs the sandboxes' spec; containers mode is Docker's")
        if self.leak is not None:
            object.__setattr__(self, "leak", Leak(self.leak))
            if self.envs < 2:
                raise ValueError("a leaky setup needs at least two environments (env01, env02)")
        require(self.provider, self.capabilities, self.needs)
        check_programs(self.programs)
        check_programs(self.canary_programs)
        for names in self.programs_by_env.values():
            check_programs(names)

    @property
    def provider(self) -> str:
        """The provider the pool runs on: ``containers``, ``gvisor`` or ``sandbox``."""
        if self.containers:
            return "containers"
        return "gvisor" if self.gvisor else "sandbox"

    @property
    def capabilities(self) -> Capabilities:
        """What that provider can do."""
        if self.containers:
            return CONTAINERS
        return GVISOR if self.gvisor else SANDBOX

    @property
    def needs(self) -> Needs:
        """What this configuration asks of its provider."""
        return Needs(leaky_setups=self.leak is not None, warm_standby=self.warm_standby)

    def programs_for(self, name: str) -> tuple[str, ...]:
        """The programs one environment starts."""
        if name in self.programs_by_env:
            return self.programs_by_env[name]
        return self.canary_programs if name == CANARY_ENV else self.programs


class PoolPlan:
    """What every environment of one pool is made of, by name and slot."""

    def __init__(self, config: PoolConfig, pool_id: str, run_dir: Path) -> None:
        self.config = config
        self.pool_id = pool_id
        self.run_dir = run_dir
        self.root = config.root / pool_id
        self.image: str | None = None  # the desktop image, once made (containers mode)

    @property
    def template(self) -> Path:
        """The home every environment's is copied from."""
        return self.root / "template"

    @property
    def names(self) -> list[str]:
        """Every environment, the canary first."""
        return [env_name(i) for i in range(self.config.envs + 1)]

    def spec(self, name: str, slot: str = "") -> EnvSpec:
        """What environment ``name`` (in its spare slot, with ``slot``) is made of."""
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
                kernel_wide_masked=not gives.unmasked_proc,
                limits=None if gives.unlimited else self.limits_for(name),
                runtime=SandboxRuntime.RUNSC if self.config.gvisor else SandboxRuntime.RUNC,
            ),
        )

    def limits_for(self, name: str) -> SandboxLimits:
        """What environment ``name`` may take (the canary weighs more)."""
        if name != CANARY_ENV:
            return self.config.limits
        # The canary's looks are timed against a tolerance: it weighs more than the
        # harness and every environment, so a busy one cannot make it miss a look.
        return dataclasses.replace(self.config.limits, cpu_shares=CANARY_CPU_SHARES)

    def has_standby(self, name: str) -> bool:
        """Whether ``name`` keeps a warm spare: not the canary (never reset), nor the two
        ends of a leaky setup (they share a display, home, bus or profile with each
        other, which a slot of their own lacks)."""
        if not self.config.warm_standby or name == CANARY_ENV:
            return False
        return self.config.leak is None or name not in (DONOR, TAKER)

    def standby_names(self) -> list[str]:
        """Every environment that keeps a warm spare."""
        return [n for n in self.names if self.has_standby(n)]

    def users(self) -> list[str]:
        """Every Unix user the pool makes, spares' included."""
        return [self.spec(n).user for n in self.names] + [
            self.spec(n, STANDBY_SLOT).user for n in self.standby_names()
        ]

    def runs_writer(self) -> bool:
        """Whether any environment starts Writer (its profile is then warmed once)."""
        return any("writer" in self.config.programs_for(n) for n in self.names)
