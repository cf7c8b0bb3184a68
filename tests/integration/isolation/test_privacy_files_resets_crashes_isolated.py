"""Tests 7-11 on the isolated pool: every one reports clean, and the two that guard the
pool itself report cross under their own deliberate fault.

Observation privacy runs first, on a pool whose environments run Chromium; one pool
whose environments run Writer and a terminal then serves the rest of the module (the
canary runs Writer in both). Trial counts and durations are cut down.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from cleanroom.core.isolation import RowResult
from cleanroom.environments.pool.plan import PoolConfig
from cleanroom.isolation.battery import TrialContext, run_test
from cleanroom.isolation.checks.channels import ChannelsCheck
from cleanroom.isolation.checks.crash_blast_radius import CrashBlastRadiusCheck
from cleanroom.isolation.checks.files_and_prefs import FilesAndPrefsCheck
from cleanroom.isolation.checks.noisy_neighbor import NoisyNeighborCheck
from cleanroom.isolation.checks.observation_privacy import ObservationPrivacyCheck
from cleanroom.isolation.checks.reset_during_write import ResetDuringWriteCheck
from cleanroom.isolation.checks.stale_generation import StaleGenerationCheck
from cleanroom.isolation.controls.faults import with_fault
from cleanroom.isolation.fault import Fault

from ..conftest import assert_all_clean, isolated_trials, require_desktop_stack, row_results

pytestmark = pytest.mark.slow

NEEDED = ("Xvfb", "xauth", "dbus-daemon", "soffice", "xterm", "chromium")


@contextmanager
def _isolated(run_dir: Path, programs: tuple[str, ...]) -> Iterator[TrialContext]:
    require_desktop_stack(NEEDED)
    with isolated_trials(run_dir, PoolConfig(envs=2, programs=programs)) as ctx:
        yield ctx


@pytest.fixture
def browsing(tmp_path: Path) -> Iterator[TrialContext]:
    """An isolated pool whose environments run Chromium (only the first test uses it, so
    it is gone before the module's other pool starts)."""
    with _isolated(tmp_path, ("browser",)) as ctx:
        yield ctx


@pytest.fixture(scope="module")
def ctx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TrialContext]:
    """An isolated pool whose environments run Writer and a terminal."""
    with _isolated(tmp_path_factory.mktemp("isolated"), ("writer", "terminal")) as ctx:
        yield ctx


def test_observation_privacy_is_clean_when_every_environment_has_its_own_display(
    browsing: TrialContext,
) -> None:
    assert_all_clean(ObservationPrivacyCheck(duration_s=6.0), browsing, trials=1)


def test_files_and_prefs_is_clean_when_homes_and_profiles_are_private(ctx: TrialContext) -> None:
    assert_all_clean(FilesAndPrefsCheck(), ctx, trials=2)  # each environment writes once


def test_reset_during_write_leaves_nothing_of_the_old_generation(ctx: TrialContext) -> None:
    assert_all_clean(ResetDuringWriteCheck(), ctx, trials=2)


def test_stale_generation_clicks_are_all_refused(ctx: TrialContext) -> None:
    assert_all_clean(StaleGenerationCheck(), ctx, trials=2)


def test_a_crash_comes_back_at_a_new_generation_and_spares_the_bystanders(
    ctx: TrialContext,
) -> None:
    before = ctx.pool.generation("env01")
    assert_all_clean(CrashBlastRadiusCheck(phase_s=2.0), ctx, trials=1)
    assert ctx.pool.generation("env01") > before
    phases = {s.phase for s in ctx.store.latency_samples("crash_blast_radius")}
    assert phases == {"before", "during", "after"}


def test_stale_generation_fires_when_the_generation_check_is_bypassed(ctx: TrialContext) -> None:
    with with_fault(Fault.GENERATION_CHECK_BYPASSED, ctx.pool) as test:
        rows = run_test(test, ctx, trials=1)
    assert [r.result for r in rows] == [RowResult.CROSS], row_results(rows)
    assert rows[0].from_env == rows[0].to_env == "env01"
    # Leaving the fault restores the check, at the generation the trial reached.
    assert_all_clean(StaleGenerationCheck(), ctx, trials=1)


def test_crash_blast_radius_fires_when_the_kill_also_hits_a_bystander(ctx: TrialContext) -> None:
    with with_fault(Fault.CRASH_HITS_BYSTANDER, ctx.pool) as test:
        rows = run_test(test, ctx, trials=1)
    got = row_results(rows)
    assert got[(0, "env01", "env02")].startswith("cross"), got
    assert got[(0, "env01", "env00")].startswith("clean"), got


def test_channels_is_clean_and_proven_when_every_environment_has_its_own_sandbox(
    ctx: TrialContext,
) -> None:
    # Clean, not lost: every collector saw its own token in every class.
    assert_all_clean(ChannelsCheck(), ctx, trials=1)


def test_noisy_neighbor_is_clean_when_every_environment_is_held_to_its_limits(
    ctx: TrialContext,
) -> None:
    # The hog asks past every limit; its cgroup and tmpfs hold it, and nobody else pays.
    assert_all_clean(NoisyNeighborCheck(), ctx, trials=1)
    (held,) = [
        json.loads(p.read_text())["held"] for p in (ctx.run_dir / "evidence").rglob("noisy.json")
    ]
    limits = ctx.pool.limits_for("env01")
    assert 0 < held["memory_mib"] <= limits.memory_mib
    assert 0 < held["tasks"] <= limits.pids and 0 < held["tmp_mib"] <= limits.tmpfs_mib
