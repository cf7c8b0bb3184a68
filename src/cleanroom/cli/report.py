"""``cleanroom report``: what a run measured, and the published number or its refusal."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from cleanroom.cli.shared import AsJson, console, usage_error
from cleanroom.reports.html import render_html, write_html
from cleanroom.reports.model import build_report
from cleanroom.reports.redteam_section import load_redteam_section
from cleanroom.reports.text import render_text
from cleanroom.store.rundb import RunStore, RunStoreError


def report(
    run_dir: Annotated[Path, typer.Argument(help="The run folder (holds run.sqlite).")],
    html: Annotated[
        Path | None,
        typer.Option("--html", help="Also write the report as one self-contained HTML file."),
    ] = None,
    as_json: AsJson = False,
) -> None:
    """Print a run's report. Exits 0 when a number is published, 1 when it is refused, 4
    when the folder holds no run."""
    if not run_dir.is_dir():
        raise usage_error([f"{run_dir}: no such run folder"])
    try:
        store = RunStore.open(run_dir, owner=False)
    except RunStoreError as exc:
        raise usage_error([str(exc)]) from exc
    with store:
        built = build_report(store)
        if html is not None:
            sections = [s for s in (load_redteam_section(run_dir),) if s is not None]
            write_html(html, render_html(built, store.canary_samples(), sections))
    if as_json:
        typer.echo(json.dumps(built.to_json(), indent=2, default=str))
    else:
        out = console()
        render_text(built, out)
        if html is not None:
            out.print(f"HTML report: {html}")
    raise typer.Exit(0 if built.to_json()["isolation"]["published"] else 1)
