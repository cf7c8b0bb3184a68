"""``cleanroom envs up|status|down``: the pool of desktop environments."""

from __future__ import annotations

import json
import time
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from cleanroom.environments.errors import PoolError
from cleanroom.environments.programs import DEFAULT_PROGRAMS, check_programs
from cleanroom.environments.supervisor import PoolProcess

app = typer.Typer(no_args_is_help=True)


def _connect(run: Path | None) -> PoolProcess:
    try:
        return PoolProcess.connect(run)
    except PoolError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc


@app.command("up", help="Start the canary env00 plus env01..envNN in a detached supervisor.")
def up(
    envs: int = typer.Option(3, "--envs", help="Environments besides the canary."),
    run: Path | None = typer.Option(None, "--run", help="Run folder (default: runs/<time>)."),  # noqa: B008
    programs: str = typer.Option(
        ",".join(DEFAULT_PROGRAMS), "--programs", help="Programs each environment runs."
    ),
) -> None:
    """Start the pool and print where it lives."""
    try:
        names = check_programs(tuple(p for p in programs.split(",") if p))
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from exc
    if not 1 <= envs <= 32:
        raise typer.BadParameter("--envs must be between 1 and 32")
    run_dir = run or Path("runs") / time.strftime("pool-%Y%m%d-%H%M%S")
    started = time.monotonic()
    try:
        proc = PoolProcess.start(run_dir, envs=envs, programs=names)
    except PoolError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    typer.echo(
        f"pool ready in {time.monotonic() - started:.1f} s: env00 (canary) + {envs} "
        f"environment(s); run folder {proc.run_dir}; API {proc.url}; supervisor pid {proc.pid}"
    )


@app.command("status", help="Show each environment's display, user, generation, programs.")
def status(
    run: Path | None = typer.Option(None, "--run", help="Run folder (default: the last pool)."),  # noqa: B008
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Print the pool's status."""
    proc = _connect(run)
    client = proc.client()
    try:
        data = client.status()
    except PoolError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    finally:
        client.close()
    if as_json:
        typer.echo(json.dumps(data, indent=2))
        return
    table = Table(title=f"pool {data['pool_id']} ({data['run_dir']})")
    for col in ("env", "display", "user", "generation", "programs", "health"):
        table.add_column(col)
    for e in data["environments"]:
        progs = ", ".join(
            f"{p['name']}:{p['pid']}" + ("" if p["alive"] else " (dead)") for p in e["programs"]
        )
        health = "[green]ok[/green]" if e["healthy"] else f"[red]{'; '.join(e['problems'])}[/red]"
        name = e["name"] + (" (canary)" if e["name"] == "env00" else "")
        table.add_row(name, e["display"] or "-", e["user"], str(e["generation"]), progs, health)
    Console().print(table)


@app.command("down", help="Stop every environment and remove the users and homes it made.")
def down(
    run: Path | None = typer.Option(None, "--run", help="Run folder (default: the last pool)."),  # noqa: B008
) -> None:
    """Stop the pool."""
    proc = _connect(run)
    started = time.monotonic()
    proc.stop()
    typer.echo(f"pool of {proc.run_dir} stopped in {time.monotonic() - started:.1f} s")
