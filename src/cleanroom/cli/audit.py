"""``cleanroom audit``: find the broken, flaky, leaky and forgeable tasks in a dataset."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from cleanroom.audit.findings import NO_ORACLE, STAGE_ORDER, Flag, TaskAudit
from cleanroom.audit.job import AuditSettings
from cleanroom.audit.jobs import AuditInputError, AuditJob, JobKind
from cleanroom.audit.osworld_table import STAGE_HEADS, PageSource, audit_markdown, stage_cell
from cleanroom.audit.pool import JobPool, LocalPool
from cleanroom.audit.probes import DEFAULT_PROBES
from cleanroom.audit.run import run_audit
from cleanroom.audit.summary import EXIT_INCOMPLETE, AuditSummary
from cleanroom.cli.osworld import MirrorSpec, parse_mirror
from cleanroom.cli.shared import (
    AsJson,
    ContainerEnvironment,
    Environment,
    ImageMap,
    ImageMapFile,
    remove_what_was_made,
    usage_error,
    use_environment,
)
from cleanroom.cli.styles import AUDIT_VERDICT, FLAG_SEVERITY
from cleanroom.cli.verify import parse_image_map, read_image_map_file
from cleanroom.core.errors import ExtraNotInstalledError
from cleanroom.harness.stopping import exit_on_signals
from cleanroom.store.auditdb import AuditStoreError
from cleanroom.verifiers.osworld.mirror import Mirror
from cleanroom.verifiers.osworld.mirror_fill import made_files_in


def audit(
    paths: Annotated[
        list[Path],
        typer.Argument(
            help="Task folders (task.toml), OSWorld task files (.json: with TASK.audit.toml "
            "beside, audited with its oracle; without, by execution on a pool of desktops), "
            "OSWorld's index (test_all.json), or folders of these."
        ),
    ],
    run_dir: Annotated[
        Path | None,
        typer.Option(
            "--run-dir",
            help="The audit's run folder (default: runs/audit-<time>); give an existing one "
            "to resume it: done tasks are skipped, interrupted ones run again.",
        ),
    ] = None,
    as_json: AsJson = False,
    html: Annotated[
        Path | None,
        typer.Option(
            "--html", metavar="FILE", help="Write the results as one self-contained HTML page."
        ),
    ] = None,
    repeats: Annotated[
        int,
        typer.Option(
            "--repeats", min=2, help="Runs of the oracle (or the no-op) to see a flaky task."
        ),
    ] = 3,
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers", min=1, help="Jobs at once in the local pool (default: one per core)."
        ),
    ] = None,
    probes: Annotated[
        list[str] | None,
        typer.Option(
            "--probe",
            help="A forging probe (red-team attack id) run under shared and sealed; repeatable.",
        ),
    ] = None,
    image_map: ImageMap = None,
    environment: Environment = ContainerEnvironment.DOCKER,
    image_map_file: ImageMapFile = None,
    mirror: MirrorSpec = None,
    desktops: Annotated[
        int,
        typer.Option(
            "--desktops",
            min=1,
            help="Environments of the pool of desktops that OSWorld tasks without an oracle "
            "are audited on (one task in each at a time).",
        ),
    ] = 1,
    markdown: Annotated[
        bool,
        typer.Option(
            "--markdown",
            help="Print the OSWorld execution audit as a Markdown page (docs/osworld-audit.md).",
        ),
    ] = False,
    ray_address: Annotated[
        str | None,
        typer.Option(
            "--ray",
            metavar="ADDRESS",
            help="Run one Ray task per job on this cluster (host:port, or auto), on nodes "
            "declaring the 'docker' resource.",
        ),
    ] = None,
) -> None:
    """Audit every task: exit 0 when none is flagged, 1 when some are, 2 when the audit is
    incomplete or could not run."""
    # A stopped run removes what it made: its threads cannot be interrupted.
    with exit_on_signals(remove_what_was_made):
        use_environment(environment)
        if image_map is None:
            image_map = []
        if probes is None:
            probes = list(DEFAULT_PROBES)
        err = Console(stderr=True)
        from_file = read_image_map_file(image_map_file) if image_map_file else ()
        mapping = tuple({**dict(from_file), **dict(parse_image_map(image_map))}.items())
        chosen = parse_mirror(mirror)
        try:
            settings = AuditSettings(
                repeats=repeats,
                probes=tuple(probes),
                image_map=mapping,
                mirror=chosen.location if chosen is not None else None,
            )
        except (KeyError, ValueError) as exc:
            raise typer.BadParameter(str(exc).strip("'\""), param_hint="--probe") from exc
        missing = [f"{p}: no such file or folder" for p in paths if not p.exists()]
        if missing:
            raise usage_error(missing)
        folder = run_dir or Path("runs") / time.strftime("audit-%Y%m%d-%H%M%S")
        pool: JobPool
        if ray_address is not None:
            from cleanroom.audit.ray_pool import RayPool

            pool = RayPool(ray_address)
        else:
            from cleanroom.audit.desktop_pool import DesktopJobPool

            pool = DesktopJobPool(desktops, folder / "desktops", LocalPool(workers))
        try:
            summary = _run_with_progress(paths, folder, settings, pool, err)
        except (AuditInputError, AuditStoreError) as exc:
            err.print(f"[red]error:[/] {escape(str(exc))}", markup=True, highlight=False)
            raise typer.Exit(EXIT_INCOMPLETE) from None
        except (RuntimeError, ExtraNotInstalledError) as exc:  # no Ray: the audit could not run
            err.print(f"[red]error:[/] {escape(str(exc))}", highlight=False)
            raise typer.Exit(EXIT_INCOMPLETE) from None
        if html is not None:
            from cleanroom.audit.html import write

            write(summary, html)
        if as_json:
            typer.echo(json.dumps(summary.to_json()))
        elif markdown:
            typer.echo(audit_markdown(summary, _page_source(paths, chosen, desktops)), nl=False)
        else:
            print_summary(summary, Console())
            if html is not None:
                Console().print(f"HTML: {html}", markup=False)
        raise typer.Exit(summary.exit_code)


def _page_source(paths: list[Path], mirror: Mirror | None, desktops: int) -> PageSource:
    """How the page was made, as the page shows it: the mirror by a placeholder (its folder
    is this machine's), and the command that made it when its files were made here."""
    shown = " ".join(str(p) for p in paths)
    command = f"cleanroom audit {shown}" + (" --mirror MIRROR" if mirror else "")
    command += f" --desktops {desktops} --markdown > docs/osworld-audit.md"
    made = 0 if mirror is None or mirror.is_url else made_files_in(Path(mirror.location))
    if not made:
        return PageSource(command)
    fill = f"cleanroom osworld mirror {shown} --made --to MIRROR"
    return PageSource(command, made_mirror_command=fill, made_files=made)


def _run_with_progress(
    paths: list[Path], folder: Path, settings: AuditSettings, pool: JobPool, err: Console
) -> AuditSummary:
    with Progress(
        TextColumn("[bold]audit[/]"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        TextColumn("{task.fields[last]}"),
        console=err,
        transient=False,
    ) as progress:
        bar = progress.add_task("audit", total=None, last="")

        def planned(total: int, done: int) -> None:
            progress.update(bar, total=total, completed=done)

        def event(job: AuditJob, what: str, result: TaskAudit | None) -> None:
            if what == "started":
                return
            shown = result.verdict if result is not None else what
            progress.update(bar, advance=1, last=f"{job.name}: {shown}")

        return run_audit(paths, folder, settings, pool, event, on_plan=planned)


def print_summary(summary: AuditSummary, console: Console) -> None:
    """The terminal summary: one row per task, the counts per flag, the verdict."""
    table = Table(title=f"audit of {len(summary.records)} task(s): {summary.where}")
    # OSWorld tasks audited by execution show each stage's answer.
    staged = any(r.job.kind is JobKind.OSWORLD_DESKTOP for r in summary.records)
    stage_heads = [STAGE_HEADS[n] for n in STAGE_ORDER] if staged else []
    for name in ("task", "verdict", *stage_heads, "flags", "seconds", "node"):
        table.add_column(name)
    for record in summary.records:
        row = summary.row(record)
        flags = " ".join(f"[{FLAG_SEVERITY[Flag(f).severity]}]{f}[/]" for f in row["flags"])
        style = AUDIT_VERDICT.get(row["verdict"], "")
        stages = {s.name: s for s in record.audit.stages} if record.audit else {}
        cells = [escape(stage_cell(stages.get(n))) for n in STAGE_ORDER] if staged else []
        table.add_row(
            row["name"],
            f"[{style}]{row['verdict']}[/]" if style else row["verdict"],
            *cells,
            flags,
            "" if row["seconds"] is None else f"{row['seconds']:.1f}",
            row["node"],
        )
    console.print(table)
    for record in summary.records:
        _print_evidence(summary.row(record), console)
    counts = summary.flag_counts()
    if counts:
        console.print("flags: " + ", ".join(f"{k} {v}" for k, v in counts.items()), markup=False)
    no_oracle = [r for r in summary.records if r.audit and NO_ORACLE in r.audit.notes]
    if no_oracle:
        console.print(
            f"{len(no_oracle)} task(s) have no solution/solve.sh: oracle_fails was not "
            "checked there",
            markup=False,
        )
    for bug in summary.cleanroom_bugs:
        console.print(
            f"[bold white on red]CLEANROOM BUG[/]: a forging probe fooled sealed on {bug.job.name}"
        )
    console.print(f"results: {summary.run_dir}", markup=False)


def _print_evidence(row: dict[str, Any], console: Console) -> None:
    for finding in row["findings"]:
        lines = [line for line in finding["evidence"].splitlines() if line.strip()] or [""]
        # A build log's last line says what failed; other evidence leads with its point.
        shown = lines[-1] if finding["flag"] == Flag.BUILD_FAILS.value else lines[0]
        console.print(f"  {row['name']}: {finding['flag']}: {shown[:160]}", markup=False)
    if row["not_run"]:
        console.print(f"  {row['name']}: not run: {row['not_run']}", markup=False)
    for gap in row["unaudited"]:
        console.print(
            f"  {row['name']}: could not audit {gap['check']} ({gap['reason']}): "
            f"{gap['detail'].splitlines()[0][:160] if gap['detail'] else ''}",
            markup=False,
        )
    if row["status"] == "interrupted":
        console.print(f"  {row['name']}: interrupted: {row['detail']}", markup=False)
