"""``cleanroom redteam``: every forging attack against every verifier mode, as a matrix."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from cleanroom.cli.shared import (
    AsJson,
    ContainerEnvironment,
    Environment,
    remove_what_was_made,
    use_environment,
)
from cleanroom.cli.styles import passed_style
from cleanroom.harness.stopping import exit_on_signals
from cleanroom.redteam import html_report
from cleanroom.redteam.assets import AssetBuildFailed, assets_for
from cleanroom.redteam.catalogue import ATTACKS, by_id
from cleanroom.redteam.matrix import Cell, Matrix, Row
from cleanroom.redteam.run_matrix import (
    ALL_MODES,
    NoTasks,
    example_tasks,
    plan_for,
    plan_rows,
    refused_rows,
    run_matrix,
)
from cleanroom.redteam.table import matrix_table
from cleanroom.verifiers.container.modes import Mode
from cleanroom.verifiers.container.runtime import RuntimeUnavailable, VerificationRuntime
from cleanroom.verifiers.container.runtime.docker import DockerRuntime
from cleanroom.verifiers.container.task import Task, TaskError, load_task


def redteam(
    task_dirs: Annotated[
        list[Path] | None,
        typer.Argument(
            help="Task folders; default: the example tasks. Each attack runs against the task "
            "it targets; a task no attack targets gets every attack."
        ),
    ] = None,
    as_json: AsJson = False,
    html_path: Annotated[
        Path | None,
        typer.Option("--html", metavar="FILE", help="Also write a self-contained HTML report."),
    ] = None,
    attack_ids: Annotated[
        list[str] | None,
        typer.Option("--attack", metavar="ID", help="Run only this attack (repeatable)."),
    ] = None,
    modes: Annotated[
        list[Mode] | None,
        typer.Option("--mode", help="Modes to run (repeatable); default all three."),
    ] = None,
    jobs: Annotated[int, typer.Option("--jobs", min=1, help="Rollouts run at the same time.")] = 2,
    environment: Environment = ContainerEnvironment.DOCKER,
    harbor_environment: Annotated[
        str | None,
        typer.Option(
            "--harbor-environment",
            metavar="TYPE",
            help="Run sealed through Harbor's own environment interface, in Harbor "
            "environments of TYPE (docker, modal, daytona...): the generic path every "
            "environment type rests on. Needs cleanroom[harbor] (Python 3.12+).",
        ),
    ] = None,
) -> None:
    """Run the red-team matrix; exit 0 when the verdict passes, 1 when not, 2 if it cannot run."""
    # A stopped run removes what it made: its threads cannot be interrupted.
    with exit_on_signals(remove_what_was_made):
        use_environment(environment)
        err = Console(stderr=True)
        if harbor_environment is not None:
            if modes and modes != [Mode.SEALED]:
                err.print("redteam: --harbor-environment runs sealed only", markup=False)
                raise typer.Exit(2)
            modes = [Mode.SEALED]
        if modes is None:
            modes = list(ALL_MODES)
        if attack_ids is None:
            attack_ids = []
        try:
            attacks = [by_id(a) for a in attack_ids] if attack_ids else list(ATTACKS)
            if task_dirs:
                tasks = [load_task(p) for p in task_dirs]
                rows = plan_for(tasks, attacks)
            else:
                tasks = [
                    t
                    for t in example_tasks()
                    if not attack_ids or any(a.target == t.name for a in attacks)
                ]
                rows = plan_rows(tasks, attacks, targeted=True)
            for attack in attacks:
                assets_for(attack)  # compiled now, so a missing compiler is said up front
            runtime = (
                DockerRuntime.connect()
                if harbor_environment is None
                else _harbor_runtime(harbor_environment)
            )
        except (TaskError, NoTasks, KeyError, RuntimeUnavailable, AssetBuildFailed) as exc:
            err.print(f"redteam: {exc}", markup=False)
            raise typer.Exit(2) from exc
        try:
            rows = _runnable(tasks, rows, modes, runtime, err, chosen=bool(task_dirs or attack_ids))
            tasks = [t for t in tasks if any(r.task == t.name for r in rows)]
            matrix = _run(tasks, rows, modes, runtime, jobs, err)
        finally:
            close = getattr(runtime, "close", None)
            if close is not None:
                close()
        if html_path is not None:
            html_path.write_text(html_report.render(matrix), encoding="utf-8")
        if as_json:
            typer.echo(json.dumps(matrix.to_json(), default=str))
        else:
            console = Console()
            console.print(matrix_table(matrix))
            _print_verdict(matrix, console)
        if html_path is not None:
            err.print(f"HTML report: {html_path}", markup=False)
        summary = matrix.summary()
        passed = summary.sealed_passed if harbor_environment is not None else summary.passed
        raise typer.Exit(0 if passed else 1)


def _harbor_runtime(kind: str) -> VerificationRuntime:
    """The generic path's runtime on Harbor environments of type ``kind``."""
    try:
        from cleanroom.verifiers.container.runtime.harbor import HarborRuntime, environment_class_of
    except ImportError as exc:
        raise RuntimeUnavailable(
            f"--harbor-environment needs Harbor (cleanroom[harbor], Python 3.12+): {exc}"
        ) from exc
    try:
        environment_class = environment_class_of(kind)
    except (ValueError, ImportError) as exc:
        raise RuntimeUnavailable(f"Harbor has no environment type {kind!r}: {exc}") from exc
    # Harbor's logger speaks at DEBUG on the console; the matrix is the report here.
    logging.getLogger("harbor").setLevel(logging.WARNING)
    return HarborRuntime(environment_class)


def _runnable(
    tasks: list[Task],
    rows: list[Row],
    modes: list[Mode],
    runtime: VerificationRuntime,
    err: Console,
    *,
    chosen: bool,
) -> list[Row]:
    """``rows`` but those that need what ``runtime`` cannot do, found before any runs:
    left out of the example tasks' catalogue, saying why; refused (exit 2) when the user
    chose the tasks or attacks."""
    refused = refused_rows(tasks, rows, runtime, modes)
    for message in dict.fromkeys(str(exc) for exc in refused.values()):
        err.print(f"redteam: {'refused' if chosen else 'left out'}: {message}", markup=False)
    if refused and chosen:
        raise typer.Exit(2)
    return [r for r in rows if r.id not in refused]


def _run(
    tasks: list[Task],
    rows: list[Row],
    modes: list[Mode],
    runtime: VerificationRuntime,
    jobs: int,
    err: Console,
) -> Matrix:
    ordered = tuple(m for m in ALL_MODES if m in modes)
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=err, transient=True) as progress:
        bar = progress.add_task("red team", total=len(rows) * len(ordered))

        def advance(row: Row, mode: Mode, cell: Cell) -> None:
            progress.update(bar, advance=1, description=f"{row.id} [{mode.value}]")

        return run_matrix(tasks, rows, runtime, modes=ordered, jobs=jobs, on_cell=advance)


def _print_verdict(matrix: Matrix, console: Console) -> None:
    summary = matrix.summary()
    style = passed_style(summary.passed)
    console.print(summary.line(), style=style, markup=False)
    problems = {
        "attack not demonstrated (its control did not fire)": summary.not_demonstrated,
        "sealed fooled, or made invalid (an escaped 0)": summary.sealed_fooled,
        "honest solution blocked": summary.honest_blocked,
        "no-op did not score 0": summary.noop_wrong,
        "cleared fooled where it should hold": summary.cleared_fooled,
    }
    for what, where in problems.items():
        for item in where:
            console.print(f"  {what}: {item}", markup=False)
    if summary.cleared_beyond_promise:
        console.print(
            f"  cleared fooled by {len(summary.cleared_beyond_promise)} attack(s) beyond its "
            "promise (its known limit, or routes through the toolchain or /tests).",
            markup=False,
        )
