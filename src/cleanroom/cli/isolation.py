"""``cleanroom isolation``: placeholder until the isolation battery lands."""

import typer

app = typer.Typer(no_args_is_help=True)
