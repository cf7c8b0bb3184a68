"""The token sweep under its leaky control, for real: on a pool whose env01 and env02
share one home, each one's own token file is foreign to the other (cross both ways); on
the isolated pool the same trial is clean."""

from __future__ import annotations

from pathlib import Path

import pytest

from cleanroom.core.isolation import SWEEP_TEST
from cleanroom.environments.leaky_setups import Leak
from cleanroom.isolation.checks import CHECKS
from cleanroom.isolation.controls.matrix import ISOLATED, run_controls
from cleanroom.store.rundb import RunStore

from ..conftest import require_desktop_stack

pytestmark = pytest.mark.slow


def test_the_sweep_fires_under_a_shared_home_and_is_clean_when_isolated(tmp_path: Path) -> None:
    require_desktop_stack(("Xvfb", "xauth", "dbus-daemon"))
    store = RunStore.create(tmp_path)
    try:
        matrix = run_controls(
            tmp_path, store, [CHECKS[SWEEP_TEST]], leaks=[Leak.SHARED_HOME], faults=False
        )
    finally:
        store.close()

    cells = {c.setup: c for c in matrix.cells}
    assert set(cells) == {ISOLATED, Leak.SHARED_HOME.value}, matrix.to_json()
    assert cells[ISOLATED].verdict == "clean", cells[ISOLATED]
    shared = cells[Leak.SHARED_HOME.value]
    assert shared.verdict == "fired", shared
    assert shared.cross == 2 and "home" in shared.detail  # env01 -> env02 and back
    assert matrix.proven(SWEEP_TEST) == [Leak.SHARED_HOME.value]
