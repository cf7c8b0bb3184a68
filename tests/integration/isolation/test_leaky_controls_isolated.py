"""On the isolated pool, tests 2-5 report clean: no cross, and nothing lost."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cleanroom.core.isolation import RowResult
from cleanroom.environments.pool.plan import PoolConfig
from cleanroom.environments.pool.pool import Pool
from cleanroom.isolation.battery import IsolationCheck, TrialContext, run_test
from cleanroom.isolation.checks.clipboard import ClipboardCheck
from cleanroom.isolation.checks.dialog_steal import DialogStealCheck
from cleanroom.isolation.checks.keyboard_storm import KeyboardStormCheck
from cleanroom.isolation.checks.modifier_leak import ModifierLeakCheck
from cleanroom.store.rundb import RunStore

from ..conftest import require_desktop_stack

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def ctx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TrialContext]:
    """The canary (idle) plus env01 and env02 running Writer, fully isolated."""
    require_desktop_stack(("Xvfb", "xauth", "dbus-daemon", "soffice"))
    run_dir: Path = tmp_path_factory.mktemp("isolated")
    store = RunStore.create(run_dir)
    pool = Pool(PoolConfig(envs=2, programs=("writer",), canary_programs=()), run_dir, store)
    pool.start()
    try:
        yield TrialContext(pool, store, 1, run_dir)
    finally:
        pool.stop()
        store.close()


def _results(test: IsolationCheck, ctx: TrialContext) -> set[RowResult]:
    rows = run_test(test, ctx, trials=1)
    assert rows, f"{test.name} returned no rows"
    return {r.result for r in rows}


def test_clipboard_is_clean_on_the_isolated_pool(ctx: TrialContext) -> None:
    assert _results(ClipboardCheck(), ctx) == {RowResult.CLEAN}


def test_keyboard_storm_is_clean_on_the_isolated_pool(ctx: TrialContext) -> None:
    assert _results(KeyboardStormCheck(span_s=2.0), ctx) == {RowResult.CLEAN}


def test_modifier_leak_is_clean_on_the_isolated_pool(ctx: TrialContext) -> None:
    assert _results(ModifierLeakCheck(hold_s=2.0), ctx) == {RowResult.CLEAN}


def test_dialog_steal_is_clean_on_the_isolated_pool(ctx: TrialContext) -> None:
    assert _results(DialogStealCheck(), ctx) == {RowResult.CLEAN}


def test_dialog_steal_times_bystanders_before_and_during(ctx: TrialContext) -> None:
    phases = {s.phase for s in ctx.store.latency_samples("dialog_steal")}
    assert phases == {"before", "during"}
