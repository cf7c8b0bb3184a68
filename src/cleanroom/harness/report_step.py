"""The end of a run: the report on screen and as one HTML file in the run folder."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from cleanroom.reports.html import render_html, write_html
from cleanroom.reports.model import RunReport, build_report
from cleanroom.reports.redteam_section import load_redteam_section
from cleanroom.reports.text import render_text
from cleanroom.store.rundb import RunStore

REPORT_HTML = "report.html"


def print_report(run_dir: Path, console: Console) -> tuple[RunReport, Path]:
    """Read the finished run, print its report and write ``report.html`` beside it."""
    with RunStore.open(run_dir, owner=False) as store:
        report = build_report(store)
        sections = [s for s in (load_redteam_section(run_dir),) if s is not None]
        html = write_html(
            run_dir / REPORT_HTML, render_html(report, store.canary_samples(), sections)
        )
    render_text(report, console)
    console.print(f"HTML report: {html}")
    return report, html
