"""``cleanroom demo``: the main job on the embedded defaults."""

from __future__ import annotations

import typer

from cleanroom.cli.shared import NewRunFolder, console, new_run_folder
from cleanroom.harness.demo import run_demo


def demo(
    run_dir: NewRunFolder = None,
) -> None:
    """Run the main job end to end and print its summary."""
    result = run_demo(new_run_folder(run_dir, "demo"), console())
    raise typer.Exit(result.loop.exit_code if result.loop is not None else 1)
