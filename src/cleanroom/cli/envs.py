"""``cleanroom envs up|status|down``: the pool of desktop environments."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from cleanroom.cli.shared import AsJson, NewRunFolder, PoolRunFolder, new_run_folder
from cleanroom.environments.errors import PoolError
from cleanroom.environments.interface import DEFAULT_PROGRAMS
from cleanroom.environments.leaky_setups import DONOR, TAKER, Leak, parse_leak
from cleanroom.environments.providers import (
    Collection,
    PoolConfig,
    PoolProcess,
    collect_garbage,
    current_run_dir,
    reap_run,
)

app = typer.Typer(no_args_is_help=True)


def _connect(run: Path | None) -> PoolProcess:
    try:
        return PoolProcess.connect(run)
    except PoolError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc


@app.command("up", help="Start the canary env00 plus env01..envNN in a detached supervisor.")
def up(
    envs: Annotated[int, typer.Option("--envs", help="Environments besides the canary.")] = 3,
    run: NewRunFolder = None,
    programs: Annotated[
        str, typer.Option("--programs", help="Programs each environment runs.")
    ] = ",".join(DEFAULT_PROGRAMS),
    containers: Annotated[
        bool,
        typer.Option("--containers", help="Run each environment's programs in its own container."),
    ] = False,
    leaky: Annotated[
        str,
        typer.Option(
            "--leaky",
            metavar="KIND",
            help="Remove one protection between env01 and env02 on purpose (a leaky setup): "
            + ", ".join(k.value for k in Leak),
        ),
    ] = "",
    warm_standby: Annotated[
        bool,
        typer.Option(
            "--warm-standby",
            help="Keep a spare slot of every acting environment up, so that a reset swaps it in.",
        ),
    ] = False,
    gvisor: Annotated[
        bool,
        typer.Option(
            "--gvisor",
            help="Run each environment's programs and display on a kernel of its own (runsc).",
        ),
    ] = False,
) -> None:
    """Start the pool and print where it lives."""
    try:
        config = PoolConfig(
            envs=envs,
            programs=tuple(p for p in programs.split(",") if p),
            containers=containers,
            leak=parse_leak(leaky),
            warm_standby=warm_standby,
            gvisor=gvisor,
        )
    except ValueError as exc:  # the pool's own checks, before anything starts
        raise typer.BadParameter(str(exc)) from exc
    leak = config.leak
    run_dir = new_run_folder(run, "pool")
    _print_collection(collect_garbage(), quiet=True)  # orphans of crashed pools go first
    started = time.monotonic()
    try:
        proc = PoolProcess.start(
            run_dir,
            envs=envs,
            programs=config.programs,
            containers=containers,
            leak=leak,
            warm_standby=warm_standby,
            gvisor=gvisor,
            # The start takes tens of seconds: each step is said on stderr as it happens.
            on_progress=lambda line: typer.echo(
                f"{time.monotonic() - started:6.1f}s {line}", err=True
            ),
        )
    except PoolError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    typer.echo(
        f"pool ready in {time.monotonic() - started:.1f} s: env00 (canary) + {envs} "
        f"environment(s); run folder {proc.run_dir}; API {proc.url}; supervisor pid {proc.pid}"
    )
    if leak is not None:
        typer.echo(f"LEAKY pool ({leak.value}): {leak.description}; {TAKER} borrows from {DONOR}")


@app.command("status", help="Show each environment's display, user, generation, programs.")
def status(
    run: PoolRunFolder = None,
    as_json: AsJson = False,
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
    leak = data.get("leak")
    title = f"pool {data['pool_id']} ({data['run_dir']})"
    if leak:
        title += f"\n[bold red]LEAKY: {leak}[/bold red] ({Leak(leak).description})"
    table = Table(title=title)
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
    run: PoolRunFolder = None,
) -> None:
    """Stop the pool; if its supervisor is dead, remove what it left behind."""
    try:
        proc = PoolProcess.connect(run)
    except PoolError as exc:
        _down_dead(run, exc)
        return
    started = time.monotonic()
    proc.stop()
    typer.echo(f"pool of {proc.run_dir} stopped in {time.monotonic() - started:.1f} s")


def _down_dead(run: Path | None, why: PoolError) -> None:
    try:
        run_dir = run or current_run_dir()
        removed = reap_run(run_dir)
    except PoolError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    if removed is None or not removed.anything:
        typer.echo(f"error: {why}; it left nothing behind", err=True)
        raise typer.Exit(2)
    typer.echo(f"the supervisor of {run_dir} was dead; {removed.summary()}")


@app.command("gc", help="Remove the users, processes, displays, homes, containers of dead pools.")
def gc(as_json: AsJson = False) -> None:
    """Find and remove orphans of pools whose owner process is gone."""
    found = collect_garbage()
    if as_json:
        typer.echo(json.dumps(found.to_json(), indent=2))
        return
    _print_collection(found, quiet=False)


def _print_collection(found: Collection, *, quiet: bool) -> None:
    for line in found.lines():
        typer.echo(line)
    if not quiet and not found.removed:
        typer.echo("orphans: none found")
