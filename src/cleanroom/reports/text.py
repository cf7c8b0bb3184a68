"""The report on a terminal: the number or its refusal first, then what stands behind it."""

from __future__ import annotations

from datetime import UTC, datetime

from rich.console import Console
from rich.table import Table

from cleanroom.core.publish import Publication
from cleanroom.reports.model import RunReport


def _when(t: float | None) -> str:
    if t is None:
        return "-"
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M:%S")


def _gap(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds:.1f} s"


def render_text(report: RunReport, console: Console) -> None:
    """Print the report."""
    console.print(f"[bold]cleanroom report[/] {report.run_dir} ({report.info.get('status')})")
    if isinstance(report.verdict, Publication):
        console.print(f"[bold green]Isolation:[/] {report.verdict.text}")
    else:
        console.print(f"[bold red]Isolation number refused:[/] {report.verdict.reason}")
    if report.nodes:
        _render_nodes(report, console)
    elif report.controls:
        last = report.controls[-1]
        fired = "fired" if last.fired else "[red]did not fire[/]"
        console.print(
            f"Positive control: {last.cross} of {last.trials} trials cross-delivered "
            f"(typing {last.typing_cross} of {last.typing_trials}, clipboard "
            f"{last.clipboard_cross} of {last.clipboard_trials}): {fired}"
        )
        console.print(f"  clipboard half: {report.control_skew}")
    else:
        console.print("Positive control: [red]not run[/]")
    console.print("Not claimed:")
    for line in report.not_claimed:
        console.print(f"  - {line}")
    console.print(
        f"Environments: {', '.join(report.environments) or 'none'}; "
        f"{report.env_hours:.3f} environment-hours"
    )

    checks = Table(title="Checks that were active")
    for col in ("test", "trials", "rows", "clean", "cross", "lost", "proven by a leaky control"):
        checks.add_column(col)
    for test, c in report.checks.items():
        proven = ", ".join(report.proven.get(test, [])) or "not proven in this run"
        checks.add_row(test, str(c["trials"]), str(c["rows"]), str(c["clean"]),
                       str(c["cross"]), str(c["lost"]), proven)  # fmt: skip
    console.print(checks)

    windows = Table(title="Windows")
    for col in ("window", "started", "ended", "status", "rows", "cross", "lost", "outcomes",
                "canary largest gap", "parked console largest gap"):  # fmt: skip
        windows.add_column(col)
    for w in report.windows:
        outcomes = ", ".join(f"{k} {v}" for k, v in w.outcomes.items()) or "-"
        status = f"[red]failed: {w.failure}[/]" if w.failure else w.status
        windows.add_row(str(w.index), _when(w.started_at), _when(w.ended_at), status,
                        str(w.rows), str(w.cross), str(w.lost), outcomes,
                        _gap(w.canary_gap_s), _gap(w.console_gap_s))  # fmt: skip
    console.print(windows)
    console.print(
        f"Canary coverage: a span of a window over {report.gap_tolerance_s:g} s without a "
        "readable look is lost"
    )
    parked = report.parked
    colour = "" if parked.active and not parked.events and not parked.lost else "[red]"
    console.print(f"Parked console: {colour}{parked.said}{'[/]' if colour else ''}")

    if report.machine:
        console.print("Machine: " + "; ".join(f"{k} {v}" for k, v in report.machine.items()))


def _render_nodes(report: RunReport, console: Console) -> None:
    """A run across nodes: every node's control and its own number, beside the merged."""
    nodes = Table(title="Nodes (the number above is the merged one)")
    for col in ("node", "status", "environments", "env-hours", "positive control", "rows",
                "cross", "lost", "its own number"):  # fmt: skip
        nodes.add_column(col)
    for n in report.nodes:
        c = n.control
        control = (
            "not run"
            if c is None
            else f"{'fired' if c.fired else '[red]did not fire[/]'}: typing {c.typing_cross} "
            f"of {c.typing_trials}, clipboard {c.clipboard_cross} of {c.clipboard_trials}"
        )
        own = (
            n.verdict.text if isinstance(n.verdict, Publication) else f"refused: {n.verdict.reason}"
        )
        status = n.status if not n.detail else f"{n.status} ({n.detail})"
        nodes.add_row(n.name, status, str(len(n.environments)), f"{n.env_hours:.3f}", control,
                      str(n.rows), str(n.cross), str(n.lost), own)  # fmt: skip
    console.print(nodes)
