"""Where pools of desktops come from, and where they go: the door for the code that
starts, supervises and cleans up pools (the harness, the CLI, the cluster nodes).

Everything else about a pool is `interface.Desktops`: `open_pool` hands one out typed as
that. The supervisor (`PoolProcess`) keeps a pool in a detached process behind the policy
API; `enter_described` runs a command in one of its environments' sandboxes from another
process, given the environment's published status (the OSWorld guest's way in);
`collect_garbage` and `reap_run` remove what a pool whose owner died left behind.
"""

from __future__ import annotations

from pathlib import Path

from cleanroom.environments.interface import Desktops
from cleanroom.environments.pool.orphans import Collection, collect_garbage, reap_run
from cleanroom.environments.pool.plan import CANARY_CPU_SHARES, DEFAULT_ROOT, PoolConfig
from cleanroom.environments.pool.pool import Pool
from cleanroom.environments.pool.pool_record import RECORDS_DIR
from cleanroom.environments.pool.supervisor import NoPool, PoolProcess, current_run_dir
from cleanroom.environments.session.sandbox import (
    Entry as SandboxEntry,
)
from cleanroom.environments.session.sandbox import (
    SandboxedProcess,
    enter_described,
    runtime_environment,
)
from cleanroom.store.rundb import RunStore

__all__ = [
    "CANARY_CPU_SHARES",
    "DEFAULT_ROOT",
    "RECORDS_DIR",
    "Collection",
    "NoPool",
    "PoolConfig",
    "PoolProcess",
    "SandboxEntry",
    "SandboxedProcess",
    "collect_garbage",
    "current_run_dir",
    "enter_described",
    "open_pool",
    "reap_run",
    "runtime_environment",
]


def open_pool(config: PoolConfig, run_dir: Path, store: RunStore | None = None) -> Desktops:
    """A pool of desktops on this host as ``config`` says (sandboxes, or program
    containers with ``config.containers``), not started yet: call its `start`."""
    return Pool(config, run_dir, store)
