"""``cleanroom isolation controls``: the leaky controls (leaky setups and the
deliberate faults of the pool)."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from cleanroom.cli.shared import AsJson, NewRunFolder, new_run_folder
from cleanroom.cli.styles import BAD, CONTROL_CELL
from cleanroom.environments.leaky_setups import Leak
from cleanroom.isolation.checks import CHECKS
from cleanroom.isolation.controls.matrix import (
    ISOLATED,
    Cell,
    ControlMatrix,
    plan_setups,
    run_controls,
)
from cleanroom.store.rundb import RunStore

app = typer.Typer(no_args_is_help=True)


def _names(text: str | None, known: list[str], what: str) -> list[str] | None:
    if not text:
        return None
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise typer.BadParameter(f"unknown {what}: {', '.join(unknown)}; known: {', '.join(known)}")
    return names


def _show(matrix: ControlMatrix, setups: list[str]) -> None:
    table = Table(title="leaky controls: test x setup")
    table.add_column("test")
    for s in setups:
        table.add_column(s)
    table.add_column("proven by")
    for test in sorted({c.test for c in matrix.cells}):
        cells = []
        for s in setups:
            c = matrix.cell(test, s)
            if c is None:
                cells.append("-")
                continue
            style = BAD if s == ISOLATED and c.cross else CONTROL_CELL[c.verdict]
            label = "CROSS" if s == ISOLATED and c.cross else c.verdict
            cells.append(f"[{style}]{label}[/{style}]")
        proven = ", ".join(matrix.proven(test)) or "[bold red]unproven[/bold red]"
        table.add_row(test, *cells, proven)
    console = Console()
    console.print(table)
    for test in matrix.cross_when_isolated():
        console.print(f"[bold red]{test} reported cross on the ISOLATED pool[/bold red]")
    for test in matrix.unproven():
        if test in matrix.names_no_leak and not matrix.has_fault_cell(test):
            why = "it names no leak and ran under no fault of its own"
        else:
            why = "it fired under none of its leaks and faults"
        console.print(f"[bold red]{test} is unproven: {why}[/bold red]")
    for note in matrix.notes:
        console.print(f"note: {note}")


@app.command(
    "controls",
    help="Run each test under each leak it names, under its own fault if it has one, and on"
    " the isolated pool.",
)
def controls(
    tests: Annotated[
        str, typer.Option("--tests", help="Comma-separated tests (default: all).")
    ] = "",
    leaks: Annotated[
        str, typer.Option("--leaks", help="Comma-separated leak kinds (default: all).")
    ] = "",
    faults: Annotated[
        bool, typer.Option("--faults/--no-faults", help="Run the deliberate-fault setups too.")
    ] = True,
    trials: Annotated[int, typer.Option("--trials", min=1, help="Trials per test and setup.")] = 1,
    gvisor: Annotated[
        bool, typer.Option("--gvisor", help="Every pool with a kernel per sandbox (runsc).")
    ] = False,
    run: NewRunFolder = None,
    as_json: AsJson = False,
) -> None:
    """Print the matrix test x setup -> fired / clean / lost; exit 1 on a finding."""
    chosen = _names(tests, sorted(CHECKS), "test") or sorted(CHECKS)
    kinds = _names(leaks, [k.value for k in Leak], "leak")
    selected = [CHECKS[n] for n in chosen]
    leak_list = [Leak(k) for k in kinds] if kinds is not None else None
    setups = list(plan_setups(selected, leak_list, faults=faults))
    run_dir = new_run_folder(run, "controls")
    store = RunStore.create(run_dir, meta={"kind": "leaky-controls"})
    console = Console(stderr=True)

    def progress(cell: Cell) -> None:
        if not as_json:
            console.print(
                f"{cell.setup:>32}  {cell.test:<22} {cell.verdict} ({cell.seconds:.0f} s)"
            )

    try:
        matrix = run_controls(
            run_dir,
            store,
            selected,
            leaks=leak_list,
            trials=trials,
            faults=faults,
            on_cell=progress,
            gvisor=gvisor,
        )
    finally:
        store.close()
    if as_json:
        typer.echo(json.dumps({"run_dir": str(run_dir), **matrix.to_json()}, indent=2))
    else:
        _show(matrix, setups)
        typer.echo(f"run folder: {run_dir}")
    if matrix.unproven() or matrix.cross_when_isolated():
        raise typer.Exit(1)
