"""The matrix as a Rich table for the terminal: attack × mode → score or outcome."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from cleanroom.redteam.matrix import Matrix, Verdict
from cleanroom.verifiers.container.modes import plan

STYLES: dict[Verdict, str] = {
    Verdict.HONEST_OK: "green",
    Verdict.TRUTH: "green",
    Verdict.HELD: "green",
    Verdict.DEMONSTRATED: "bold yellow",
    Verdict.BEYOND_PROMISE: "magenta",
    Verdict.HONEST_BLOCKED: "bold red",
    Verdict.VACUOUS: "bold red",
    Verdict.NOT_DEMONSTRATED: "bold red",
    Verdict.FOOLED: "bold red",
    Verdict.ESCAPED: "bold red",
    Verdict.MISSING: "dim",
}


def matrix_table(matrix: Matrix) -> Table:
    """One row per agent run, one column per mode; each cell says what it shows."""
    table = Table(title="Container verifier red-team matrix", show_lines=False)
    table.add_column("task", style="dim", no_wrap=True)
    table.add_column("agent", no_wrap=True)
    for mode in matrix.modes:
        title = f"{mode.value}\n(demonstrates)" if plan(mode).demonstrates_attacks else mode.value
        table.add_column(title, justify="left")
    previous = None
    for row in matrix.rows:
        cells: list[Text | str] = [row.task if row.task != previous else "", row.label]
        previous = row.task
        for mode in matrix.modes:
            cell = matrix.get(row, mode)
            verdict = matrix.judge(row, mode)
            shown = cell.short if cell else "-"
            if verdict not in (Verdict.HONEST_OK, Verdict.TRUTH, Verdict.HELD):
                shown = f"{shown}  {verdict.value}"
            cells.append(Text(shown, style=STYLES[verdict]))
        table.add_row(*cells)
    return table
