"""Tests 7-11 under each leaky setup they name: every one reports cross there.

One pool per leak, shared by every test that names it; each pool runs only the
programs those tests need. Stale generation names no leak: its positive control is its
own fault (see the isolated module).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from cleanroom.core.channels import CLASSES
from cleanroom.core.isolation import IsolationRow, RowResult
from cleanroom.environments.leaky_setups import Leak
from cleanroom.environments.pool.plan import PoolConfig
from cleanroom.isolation.battery import IsolationCheck, TrialContext, run_test
from cleanroom.isolation.checks.channels import ChannelsCheck
from cleanroom.isolation.checks.crash_blast_radius import CrashBlastRadiusCheck
from cleanroom.isolation.checks.files_and_prefs import FilesAndPrefsCheck
from cleanroom.isolation.checks.noisy_neighbor import NoisyNeighborCheck
from cleanroom.isolation.checks.observation_privacy import ObservationPrivacyCheck
from cleanroom.isolation.checks.reset_during_write import ResetDuringWriteCheck
from cleanroom.isolation.checks.stale_generation import StaleGenerationCheck
from cleanroom.verify_server.process import VerifyServerProcess

from ..conftest import pool_trials, require_desktop_stack

pytestmark = pytest.mark.slow
OPEN_RUNS = Path("/var/lib/cleanroom/test-open-runs")

PROGRAMS = {
    Leak.SHARED_DISPLAY: ("browser", "terminal"),
    Leak.SHARED_PROFILE: ("writer", "terminal"),
    Leak.SHARED_RUNTIME_DIR: ("terminal",),
    Leak.SHARED_HOME: ("writer", "terminal"),
    Leak.SHARED_CLIPBOARD: ("writer", "terminal"),
    Leak.OPEN_HOST: ("terminal",),
    Leak.UNFILTERED: ("terminal",),
    Leak.SHARED_INODES: ("terminal",),
    Leak.UNLIMITED: ("terminal",),
    Leak.X_SERVER_OUTSIDE: ("terminal",),
    Leak.UNMASKED_PROC: ("terminal",),
}
# What crosses between env01 and env02 when only their sandboxes' one protection is
# gone: the sandboxes stand, so nothing else does.
ONLY_CROSSING = {
    Leak.UNFILTERED: {"keys", "aio", "page_cache"},
    Leak.SHARED_INODES: {"locks", "watches"},
    Leak.UNLIMITED: {"limits"},
    Leak.X_SERVER_OUTSIDE: {"x_server"},
    Leak.UNMASKED_PROC: {"proc_locks", "counters"},
}
# What the limit probe must name among what the two may take without their limits.
LIMITS_NAMED = {Leak.UNLIMITED: ("ptys unlimited", "memory_bytes unlimited")}
# What of the harness the two reach when only that protection is gone.
ONLY_REACHING = {Leak.UNFILTERED: {"harness_programs"}}
# Cut down for the suite; in this order the crash, which disturbs the pool most, is last.
TESTS: list[IsolationCheck] = [
    ObservationPrivacyCheck(duration_s=5.0),
    FilesAndPrefsCheck(),
    ResetDuringWriteCheck(),
    CrashBlastRadiusCheck(phase_s=1.0),
    ChannelsCheck(),
    NoisyNeighborCheck(),
]


def naming(leak: Leak) -> list[IsolationCheck]:
    """The tests of this module that name ``leak``."""
    return [t for t in TESTS if leak in type(t).detects]


def test_every_leak_is_named_by_some_test_and_stale_generation_names_none() -> None:
    assert all(naming(leak) for leak in Leak)
    assert StaleGenerationCheck.detects == ()


@pytest.fixture(scope="module")
def verify(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VerifyServerProcess]:
    """One verify server for the module (observation privacy shows its form page)."""
    with VerifyServerProcess.start(tmp_path_factory.mktemp("verify-server")) as server:
        yield server


@pytest.fixture
def leaky(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    verify: VerifyServerProcess,
) -> Iterator[TrialContext]:
    """A pool with one protection removed between env01 and env02."""
    leak: Leak = request.param
    require_desktop_stack(("Xvfb", "xauth", "dbus-daemon", "soffice", "xterm", "chromium"))
    run_dir: Path = tmp_path_factory.mktemp(leak.value)
    if leak is Leak.OPEN_HOST:
        # The open host kept its run folders where anyone could walk to them.
        OPEN_RUNS.mkdir(parents=True, mode=0o755, exist_ok=True)
        run_dir = Path(tempfile.mkdtemp(prefix="open-host-", dir=OPEN_RUNS))
    config = PoolConfig(envs=2, programs=PROGRAMS[leak], canary_programs=(), leak=leak)
    client = verify.client()
    try:
        with pool_trials(run_dir, config, client) as ctx:
            yield ctx
    finally:
        client.close()
        if OPEN_RUNS in run_dir.parents:
            shutil.rmtree(run_dir, ignore_errors=True)


# `make test` samples the leaks whose probes are the channel check's (every class, the
# limits included, on the open host; the kernel-wide classes alone); the demo's own leaky
# controls prove the other checks there too. Every leak runs in `make test-integrations`.
IN_EVERY_RUN = {Leak.OPEN_HOST, Leak.UNFILTERED, Leak.UNMASKED_PROC}


@pytest.mark.parametrize(
    "leaky",
    [k if k in IN_EVERY_RUN else pytest.param(k, marks=pytest.mark.integrations) for k in Leak],
    ids=[k.value for k in Leak],
    indirect=True,
)
def test_every_test_naming_a_leak_reports_cross_under_it(leaky: TrialContext) -> None:
    leak = leaky.pool.config.leak
    assert leak is not None
    silent = {}
    for test in naming(leak):
        rows = run_test(test, leaky, trials=1)
        if isinstance(test, ChannelsCheck) and leak is Leak.OPEN_HOST:
            _assert_every_channel_class_fires(rows)
        if isinstance(test, ChannelsCheck) and leak in ONLY_CROSSING:
            _assert_only_crossing(rows, ONLY_CROSSING[leak])
            _assert_only_reaching(rows, ONLY_REACHING.get(leak, set()))
        if isinstance(test, ChannelsCheck) and leak in LIMITS_NAMED:
            limits = " ".join(r.detail for r in rows if r.detail.startswith("limits:"))
            assert all(name in limits for name in LIMITS_NAMED[leak]), limits
        crossed = {(r.from_env, r.to_env) for r in rows if r.result is RowResult.CROSS}
        # The leak is between env01 and env02: that is where the cross must be, in
        # either direction, and never towards the canary, which shares nothing (except
        # on the open host, where root through sudo reaches every home; without the
        # filter, where a key every user may view is in the canary's /proc/keys too and
        # the canary times the page cache env01 evicts; and without limits, where what
        # env01 may take it can take from the canary too).
        towards_canary = any(dst == "env00" for _, dst in crossed)
        if not crossed & {("env01", "env02"), ("env02", "env01")} or (
            towards_canary and leak not in (Leak.OPEN_HOST, Leak.UNFILTERED, Leak.UNLIMITED)
        ):
            silent[test.name] = [
                f"{r.from_env}->{r.to_env} {r.result.value} {r.detail}" for r in rows
            ]
    assert not silent, silent


def _assert_every_channel_class_fires(rows: list[IsolationRow]) -> None:
    """On the open host, every class crosses between env01 and env02, and the harness
    is reached (its ports, its run folder)."""
    crossed = {
        r.detail.split(":")[0]
        for r in rows
        if r.result is RowResult.CROSS and {r.from_env, r.to_env} == {"env01", "env02"}
    }
    reached = {r.detail.split(":")[0] for r in rows if r.result is RowResult.CROSS}
    assert crossed == {*CLASSES, "limits"}, [r for r in rows if r.result is not RowResult.CLEAN]
    assert {"control_plane", "harness_files"} <= reached


def _assert_only_crossing(rows: list[IsolationRow], classes: set[str]) -> None:
    """Between env01 and env02, exactly ``classes`` cross."""
    crossed = {
        r.detail.split(":")[0]
        for r in rows
        if r.result is RowResult.CROSS and {r.from_env, r.to_env} == {"env01", "env02"}
    }
    assert crossed == classes, [r for r in rows if r.result is not RowResult.CLEAN]


def _assert_only_reaching(rows: list[IsolationRow], classes: set[str]) -> None:
    """Exactly ``classes`` of the harness are reached, by env01 and env02 only."""
    reached = {
        (r.detail.split(":")[0], r.from_env if r.to_env == "harness" else r.to_env)
        for r in rows
        if r.result is RowResult.CROSS and "harness" in (r.from_env, r.to_env)
    }
    assert reached == {(c, e) for c in classes for e in ("env01", "env02")}, reached
