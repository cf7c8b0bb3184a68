"""``cleanroom demo``: the main job on the embedded defaults."""

from __future__ import annotations

import time
from pathlib import Path

import typer
from rich.console import Console

from cleanroom.harness.demo import run_demo


def demo(
    run_dir: Path | None = typer.Option(  # noqa: B008
        None, "--run", help="Run folder to create (default: runs/demo-<time>)."
    ),
) -> None:
    """Run the main job end to end and print its summary."""
    folder = run_dir or Path("runs") / time.strftime("demo-%Y%m%d-%H%M%S")
    if folder.exists() and any(folder.iterdir()):
        typer.echo(f"error: {folder} exists and is not empty", err=True)
        raise typer.Exit(2)
    console = Console() if Console().is_terminal else Console(width=120)
    result = run_demo(folder, console)
    raise typer.Exit(result.loop.exit_code if result.loop is not None else 1)
