"""The controls runner, for real, on one test whose only positive control is a fault of
the pool: stale_generation is clean on the isolated pool, fires with the generation
check bypassed, and so ends proven; the run leaves no verify server behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from cleanroom.isolation.checks import CHECKS
from cleanroom.isolation.controls.matrix import ISOLATED, fault_setup, run_controls
from cleanroom.isolation.fault import Fault
from cleanroom.store.rundb import RunStore

from ..conftest import require_desktop_stack

pytestmark = pytest.mark.slow


def _processes_naming(folder: Path) -> list[int]:
    """Pids of running processes whose command line names ``folder``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # gone meanwhile
            continue
        if str(folder) in argv:
            found.append(int(entry.name))
    return found


def test_stale_generation_is_proven_by_its_fault_and_clean_when_isolated(tmp_path: Path) -> None:
    require_desktop_stack(("Xvfb", "xauth", "dbus-daemon"))
    fault = fault_setup(Fault.GENERATION_CHECK_BYPASSED)
    store = RunStore.create(tmp_path)
    try:
        matrix = run_controls(tmp_path, store, [CHECKS["stale_generation"]], trials=1)
        recorded = store.leaky_controls()
    finally:
        store.close()

    cells = {c.setup: c for c in matrix.cells}
    assert set(cells) == {ISOLATED, fault}, matrix.to_json()
    assert cells[ISOLATED].verdict == "clean", cells[ISOLATED]
    assert cells[fault].verdict == "fired", cells[fault]
    assert matrix.proven("stale_generation") == [fault]
    assert matrix.unproven() == []
    assert matrix.cross_when_isolated() == []
    # The fault cell is recorded like a leaky one; the isolated cell is not.
    assert [(r.test, r.leak, r.fired) for r in recorded] == [("stale_generation", fault, True)]
    assert (tmp_path / "controls.json").exists()
    assert _processes_naming(tmp_path / "verify-server") == []
