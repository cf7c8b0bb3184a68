"""The per-test positive controls as a step of the harness loop.

Each test runs under the leaky setups it names (and, with ``faults``, under its own
deliberate fault), on pools of their own beside the run's pool; every cell is stored in
the run database, so the report can say which active check was proven in this run. The
isolated setup is left out: the windows run every test on the isolated pool.

The canary's control runs first, on the run's own pool: a leak planted in env00 after the
windows, which the canary's sampling and rule must see (`isolation.canary_control`), and
text typed at the parked console, which its own looks must see.
"""

from __future__ import annotations

from collections.abc import Sequence

from cleanroom.environments.leaks import Leak
from cleanroom.harness.loop import LoopServices, load_battery
from cleanroom.isolation.canary_control import run_canary_control, run_console_control
from cleanroom.isolation.controls import Cell, run_controls


def leaky_controls(
    s: LoopServices,
    names: Sequence[str],
    *,
    leaks: Sequence[Leak] | None = None,
    faults: bool = True,
    canary: bool = True,
) -> list[str]:
    """Run the controls of the tests ``names`` (and, with ``canary``, the canary's own)
    and return one line per cell."""
    lines = canary_control(s) if canary else []
    battery = load_battery()
    tests = [battery[name] for name in names if name in battery]
    missing = [name for name in names if name not in battery]
    if missing:
        s.progress.event(f"[red]leaky controls: no test named {', '.join(missing)}[/]")
    kinds = ", ".join(k.value for k in leaks) if leaks else "every leak each names"
    s.progress.step(f"leaky controls: {', '.join(t.name for t in tests)} under {kinds}")

    def said(cell: Cell) -> None:
        s.progress.event(f"leaky control {cell.test} under {cell.setup}: {cell.verdict}")

    matrix = run_controls(
        s.store.run_dir,
        s.store,
        tests,
        leaks=leaks,
        isolated=False,
        faults=faults,
        pool_root=s.config.pool_root,
        on_cell=said,
    )
    for test in matrix.unproven():
        s.progress.event(f"[red]{test} is unproven in this run[/]")
    return lines + [f"{c.test} under {c.setup}: {c.verdict}" for c in matrix.cells]


def canary_control(s: LoopServices) -> list[str]:
    """Plant leaks in the run's canary (and its parked console, when active), store each
    cell, and return one line per cell."""
    s.progress.step("the canary's control: leaks planted in env00 after the windows")
    cells = run_canary_control(s.pool)
    if s.parked is not None:
        cells.append(run_console_control(s.parked))
    else:
        s.progress.event("the parked console is not active: no control for it, nothing claimed")
    lines = []
    for cell in cells:
        s.store.add_leaky_control(cell)
        verdict = "fired" if cell.fired else "did not fire"
        colour = "green" if cell.fired else "red"
        s.progress.event(
            f"{cell.test} control, {cell.leak}: [{colour}]{verdict}[/] ({cell.detail})"
        )
        lines.append(f"{cell.test} under {cell.leak}: {verdict}")
    return lines
