"""Under each leak it names, each of tests 2-5 reports cross (its positive control), and
each leaky setup really removes its protection."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cleanroom.core.isolation import RowResult
from cleanroom.core.tokens import RolloutId, mint
from cleanroom.environments.leaky_setups import Leak
from cleanroom.environments.policy.handle import LocalHandle
from cleanroom.environments.pool.plan import PoolConfig
from cleanroom.environments.pool.pool import Pool
from cleanroom.isolation.battery import IsolationCheck, TrialContext, run_test
from cleanroom.isolation.checks.clipboard import ClipboardCheck
from cleanroom.isolation.checks.dialog_steal import DialogStealCheck
from cleanroom.isolation.checks.keyboard_storm import KeyboardStormCheck
from cleanroom.isolation.checks.modifier_leak import ModifierLeakCheck
from cleanroom.lifecycle import wait_until
from cleanroom.store.rundb import RunStore

from ..conftest import require_desktop_stack

pytestmark = pytest.mark.slow
# The demo's own leaky controls run these tests under the shared display in every
# `make test` (its test reads each cell); here they run in `make test-integrations`.
ALSO_IN_THE_DEMO = pytest.mark.integrations


def _start(tmp: pytest.TempPathFactory, leak: Leak) -> tuple[Pool, RunStore, TrialContext]:
    require_desktop_stack(("Xvfb", "xauth", "dbus-daemon", "soffice"))
    run_dir: Path = tmp.mktemp(leak.value)
    store = RunStore.create(run_dir)
    config = PoolConfig(envs=2, programs=("writer",), canary_programs=(), leak=leak)
    pool = Pool(config, run_dir, store)
    try:
        pool.start()
    except BaseException:
        store.close()
        raise
    return pool, store, TrialContext(pool, store, 1, run_dir)


def _leaky_setup(leak: Leak) -> Any:
    """A module-scoped fixture: a pool with ``leak`` between env01 and env02, as a trial's
    context, stopped after the module's tests."""

    @pytest.fixture(scope="module")
    def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TrialContext]:
        pool, store, ctx = _start(tmp_path_factory, leak)
        try:
            yield ctx
        finally:
            pool.stop()
            store.close()

    return setup


shared_display = _leaky_setup(Leak.SHARED_DISPLAY)
shared_clipboard = _leaky_setup(Leak.SHARED_CLIPBOARD)
shared_home = _leaky_setup(Leak.SHARED_HOME)
shared_runtime_dir = _leaky_setup(Leak.SHARED_RUNTIME_DIR)


def _fires(test: IsolationCheck, ctx: TrialContext) -> bool:
    rows = run_test(test, ctx, trials=1)
    return any(r.result is RowResult.CROSS for r in rows)


# -- the setups are real ------------------------------------------------------------------


@ALSO_IN_THE_DEMO
def test_under_shared_display_env02_works_on_env01s_display(shared_display: TrialContext) -> None:
    pool = shared_display.pool
    one, two = pool.env("env01"), pool.env("env02")
    assert two.live.display.name == one.live.display.name
    writers = [w for w in one.windows() if w.wm_class == "libreoffice-writer"]
    assert len(writers) == 2  # env02's Writer is on env01's screen


def test_under_shared_clipboard_a_value_set_on_env01_is_read_on_env02(
    shared_clipboard: TrialContext,
) -> None:
    pool = shared_clipboard.pool
    secret = f"bridged {mint(RolloutId('env01', 1, 9))}"
    LocalHandle(pool, "env01").set_clipboard(secret)
    assert wait_until(lambda: LocalHandle(pool, "env02").get_clipboard() == secret, 10, 0.1)


def test_under_shared_home_both_environments_have_one_home(shared_home: TrialContext) -> None:
    pool = shared_home.pool
    assert pool.env("env02").account.home == pool.env("env01").account.home


# -- each test fires under the leaks it names ---------------------------------------------


def test_clipboard_fires_under_shared_clipboard(shared_clipboard: TrialContext) -> None:
    assert Leak.SHARED_CLIPBOARD in ClipboardCheck.detects
    assert _fires(ClipboardCheck(), shared_clipboard)


@ALSO_IN_THE_DEMO
def test_clipboard_fires_under_shared_display(shared_display: TrialContext) -> None:
    assert Leak.SHARED_DISPLAY in ClipboardCheck.detects
    assert _fires(ClipboardCheck(), shared_display)


def test_keyboard_storm_fires_under_shared_home(shared_home: TrialContext) -> None:
    assert Leak.SHARED_HOME in KeyboardStormCheck.detects
    assert _fires(KeyboardStormCheck(span_s=2.0), shared_home)


@ALSO_IN_THE_DEMO
def test_keyboard_storm_fires_under_shared_display(shared_display: TrialContext) -> None:
    assert Leak.SHARED_DISPLAY in KeyboardStormCheck.detects
    assert _fires(KeyboardStormCheck(span_s=2.0), shared_display)


@ALSO_IN_THE_DEMO
def test_modifier_leak_fires_under_shared_display(shared_display: TrialContext) -> None:
    assert Leak.SHARED_DISPLAY in ModifierLeakCheck.detects
    assert _fires(ModifierLeakCheck(hold_s=2.0), shared_display)


@ALSO_IN_THE_DEMO
def test_dialog_steal_fires_under_shared_display(shared_display: TrialContext) -> None:
    assert Leak.SHARED_DISPLAY in DialogStealCheck.detects
    rows = run_test(DialogStealCheck(), shared_display, trials=1)
    crossed = [r for r in rows if r.result is RowResult.CROSS]
    # env01's Save As reaches the topmost Writer, env02's: cross from env01 to env02.
    assert [(r.from_env, r.to_env) for r in crossed] == [("env01", "env02")]
    assert "env02's program" in crossed[0].detail


def test_dialog_steal_fires_under_shared_runtime_dir(shared_runtime_dir: TrialContext) -> None:
    assert Leak.SHARED_RUNTIME_DIR in DialogStealCheck.detects
    rows = run_test(DialogStealCheck(), shared_runtime_dir, trials=1)
    crossed = {(r.from_env, r.to_env) for r in rows if r.result is RowResult.CROSS}
    # One AT-SPI bus: env02's tree shows env01's dialog, env01's shows env02's typing.
    assert crossed == {("env01", "env02"), ("env02", "env01")}
