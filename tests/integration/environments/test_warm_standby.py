"""Warm standby on real environments: a reset swaps in a slot brought up from the
template, nothing of the old generation runs once it returns, the old slot comes back
wiped, and the three isolation tests that involve resets stay clean on such a pool and
still fire under their faults.
"""

from __future__ import annotations

import pwd
from collections.abc import Iterator
from pathlib import Path

import pytest

from cleanroom.core.isolation import RowResult
from cleanroom.environments.actions import SetClipboard
from cleanroom.environments.errors import StaleGeneration
from cleanroom.environments.pool.plan import STANDBY_SLOT, PoolConfig
from cleanroom.environments.pool.pool import Pool
from cleanroom.environments.session.processes import kill_uid, pids_of_uid
from cleanroom.isolation.battery import TrialContext, run_test
from cleanroom.isolation.checks.crash_blast_radius import CrashBlastRadiusCheck
from cleanroom.isolation.checks.reset_during_write import ResetDuringWriteCheck
from cleanroom.isolation.checks.stale_generation import StaleGenerationCheck
from cleanroom.isolation.controls.faults import with_fault
from cleanroom.isolation.fault import Fault
from cleanroom.lifecycle import wait_until

from ..conftest import assert_all_clean, isolated_trials, require_desktop_stack, row_results

pytestmark = pytest.mark.slow

NEEDED = ("Xvfb", "xauth", "dbus-daemon", "soffice", "xterm")
UP_WITHIN_S = 120.0


@pytest.fixture(scope="module")
def ctx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TrialContext]:
    """An isolated pool of two environments running Writer and a terminal, each with a
    spare slot."""
    require_desktop_stack(NEEDED)
    config = PoolConfig(envs=2, programs=("writer", "terminal"), warm_standby=True)
    with isolated_trials(tmp_path_factory.mktemp("standby"), config) as ctx:
        yield ctx


def _spares_up(pool: Pool) -> None:
    for name in ("env01", "env02"):
        assert pool.standby_ready(name, UP_WITHIN_S), pool.describe()


def test_a_reset_swaps_in_a_fresh_slot_and_nothing_of_the_old_generation_runs(
    ctx: TrialContext,
) -> None:
    pool = ctx.pool
    _spares_up(pool)
    before = pool.env("env01").describe()
    assert pool.describe()["environments"][1]["standby"] == "up"
    mark = Path(before["home"]) / "Desktop" / "old-generation.txt"
    leftover = f"echo old > {mark}; sleep 600 </dev/null >/dev/null 2>&1 &"  # outlives the call
    code, _ = pool.env("env01").run_inside(["sh", "-c", leftover])
    assert code == 0 and mark.exists()
    old = pool.generation("env01")

    new = pool.reset("env01", old)

    after = pool.env("env01").describe()
    assert new > old
    assert after["user"] == f"{before['user']}{STANDBY_SLOT}"
    assert (after["display"], after["home"]) != (before["display"], before["home"])
    assert pids_of_uid(before["uid"]) == []  # the sleep and every program of it ended
    assert not (Path(after["home"]) / "Desktop" / "old-generation.txt").exists()
    assert not pool.env("env01").problems() and pool.env("env01").window_of("writer")
    with pytest.raises(StaleGeneration):
        pool.act("env01", old, SetClipboard("set_clipboard", "stale"))
    # The old slot comes back as the spare, wiped: the next reset swaps it in clean.
    assert pool.standby_ready("env01", UP_WITHIN_S)
    assert not mark.exists()
    pool.reset("env01", new)
    assert pool.env("env01").describe()["user"] == before["user"]
    assert not pool.env("env01").problems()


def test_a_spare_that_died_is_not_swapped_in_and_the_reset_happens_in_place(
    ctx: TrialContext,
) -> None:
    pool = ctx.pool
    _spares_up(pool)
    user = pool.env("env02").account.user
    spare = f"{user}{STANDBY_SLOT}" if not user.endswith(STANDBY_SLOT) else user[:-1]
    kill_uid(pwd.getpwnam(spare).pw_uid, grace_s=0.0)  # its display lives: only programs die
    # The programs' sandboxes end a moment after the programs in them: the reset is made
    # once the slot shows it, as a spare that died a while before a reset would.
    slot = pool.life.standby.spare("env02") if pool.life.standby is not None else None
    assert slot is not None
    assert wait_until(lambda: bool(slot.problems()), 10, 0.05), slot.describe()

    pool.reset("env02", pool.generation("env02"))

    assert pool.env("env02").account.user == user  # reset in place, as without standby
    assert not pool.env("env02").problems()
    assert pool.life.standby is not None and pool.life.standby.failures[-1][0] == "env02"
    assert pool.standby_ready("env02", UP_WITHIN_S)  # the dead spare is brought up again


# On a pool without standby in every run (the isolated module); with it here, in `make
# test-integrations`, as the next one.
@pytest.mark.integrations
def test_reset_during_write_leaves_nothing_of_the_old_generation(ctx: TrialContext) -> None:
    _spares_up(ctx.pool)
    assert_all_clean(ResetDuringWriteCheck(), ctx, trials=2)


# As above: in `make test-integrations`.
@pytest.mark.integrations
def test_stale_generation_clicks_are_all_refused(ctx: TrialContext) -> None:
    _spares_up(ctx.pool)
    assert_all_clean(StaleGenerationCheck(), ctx, trials=2)


def test_a_crash_comes_back_in_the_spare_slot_and_spares_the_bystanders(
    ctx: TrialContext,
) -> None:
    _spares_up(ctx.pool)
    user = ctx.pool.env("env01").account.user
    before = ctx.pool.generation("env01")
    assert_all_clean(CrashBlastRadiusCheck(phase_s=2.0), ctx, trials=1)
    assert ctx.pool.generation("env01") > before
    assert ctx.pool.env("env01").account.user != user  # recovered by the swap


def test_stale_generation_fires_when_the_generation_check_is_bypassed(ctx: TrialContext) -> None:
    _spares_up(ctx.pool)
    with with_fault(Fault.GENERATION_CHECK_BYPASSED, ctx.pool) as test:
        rows = run_test(test, ctx, trials=1)
    assert [r.result for r in rows] == [RowResult.CROSS], row_results(rows)


# The same fault on a pool without standby is in every run (the isolated module).
@pytest.mark.integrations
def test_crash_blast_radius_fires_when_the_kill_also_hits_a_bystander(ctx: TrialContext) -> None:
    _spares_up(ctx.pool)
    with with_fault(Fault.CRASH_HITS_BYSTANDER, ctx.pool) as test:
        rows = run_test(test, ctx, trials=1)
    got = row_results(rows)
    assert got[(0, "env01", "env02")].startswith("cross"), got
