"""``cleanroom envs``: placeholder until the desktop environments land."""

import typer

app = typer.Typer(no_args_is_help=True)
