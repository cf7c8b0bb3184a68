"""``cleanroom tokens``: mint tokens and scan bytes, files and trees for them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from cleanroom import tree_scan
from cleanroom.cli.shared import AsJson
from cleanroom.core import tokens as core_tokens

app = typer.Typer(no_args_is_help=True)


@app.command("mint", help="Print a fresh token for a rollout id such as env03-w001-r0007.")
def mint(rollout_id: str) -> None:
    try:
        typer.echo(str(core_tokens.mint(rollout_id)))
    except core_tokens.TokenError as exc:
        raise typer.BadParameter(str(exc)) from exc


@app.command("scan", help="Find every token in files or folder trees and attribute each one.")
def scan(
    paths: Annotated[list[Path], typer.Argument(help="Files or folders to search.")],
    as_json: AsJson = False,
) -> None:
    errors: list[tree_scan.ScanError] = []
    hits: list[core_tokens.TokenHit] = []
    for p in paths:
        if not p.exists():
            typer.echo(f"error: no such file or folder: {p}", err=True)
            raise typer.Exit(2)
        if p.is_dir():
            scan = tree_scan.scan_tree(p)
            hits.extend(scan.hits)
            errors.extend(scan.errors)
        else:
            try:
                hits.extend(tree_scan.scan_file(p))
            except OSError as exc:
                errors.append(tree_scan.ScanError(str(p), exc.strerror or str(exc)))
    if as_json:
        for h in hits:
            row = {
                "token": str(h.token),
                "env": h.env,
                "rollout_id": h.rollout_id,
                "source": h.source,
                "offset": h.offset,
            }
            typer.echo(json.dumps(row))
    else:
        table = Table("token", "env", "rollout", "source", "offset")
        for h in hits:
            table.add_row(str(h.token), h.env, h.rollout_id, h.source, str(h.offset))
        Console().print(table)
        typer.echo(f"{len(hits)} token(s)")
    for e in errors:
        typer.echo(f"unreadable: {e}", err=True)
    raise typer.Exit(2 if errors else 0)
