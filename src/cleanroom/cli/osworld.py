"""``cleanroom osworld``: placeholder until the OSWorld checker commands land."""

import typer

app = typer.Typer(no_args_is_help=True)
