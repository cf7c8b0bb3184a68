"""``cleanroom demo``: the main job on the embedded defaults."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cleanroom.cli.shared import console, new_run_folder
from cleanroom.harness.demo import run_demo


def demo(
    run_dir: Annotated[
        Path | None, typer.Option("--run", help="Run folder to create (default: runs/demo-<time>).")
    ] = None,
) -> None:
    """Run the main job end to end and print its summary."""
    result = run_demo(new_run_folder(run_dir, "demo"), console())
    raise typer.Exit(result.loop.exit_code if result.loop is not None else 1)
