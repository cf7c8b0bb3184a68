"""``cleanroom osworld``: report on, run and validate OSWorld task checkers, and fill a
mirror of the files their tasks fetch."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from cleanroom.cli.shared import AsJson
from cleanroom.cli.styles import status_style
from cleanroom.core.outcomes import EXIT_INVALID, Outcome, Reason
from cleanroom.guests import GUEST_SPECS, Guest, GuestError, UnknownGuestKind, open_guest
from cleanroom.verifiers.osworld.coverage import (
    NEED_RULES,
    Need,
    TaskCoverage,
    by_domain,
    coverage_json,
    coverage_markdown,
    lacking,
    missing_pieces,
    task_coverage,
)
from cleanroom.verifiers.osworld.download import TASK_FILE_CAP_BYTES
from cleanroom.verifiers.osworld.evaluator import check_task
from cleanroom.verifiers.osworld.mirror import (
    DATASET_URL,
    Mirror,
    task_file_names,
    task_file_urls,
)
from cleanroom.verifiers.osworld.mirror_fill import (
    MANIFEST_NAME,
    FileState,
    FillReport,
    fill_mirror,
)
from cleanroom.verifiers.osworld.settings import CheckSettings
from cleanroom.verifiers.osworld.support import TaskSupport, task_support
from cleanroom.verifiers.osworld.task import Task, TaskFileError, load_task
from cleanroom.verifiers.osworld.task_list import TaskList, read_task_list
from cleanroom.verifiers.osworld.validate import Validation, validate_task

app = typer.Typer(no_args_is_help=True)

_GUEST_HELP = f"Where to run: {' or '.join(GUEST_SPECS)}."

# Options that `check` and `validate` share.
GuestKind = Annotated[str, typer.Option("--guest", help=_GUEST_HELP)]
GuestUser = Annotated[str | None, typer.Option("--user", help="Run as this user.")]
GetterTimeout = Annotated[float, typer.Option("--getter-timeout", help="Seconds per getter.")]
ClientPassword = Annotated[str, typer.Option("--client-password", help="For {CLIENT_PASSWORD}.")]
ScreenSize = Annotated[str, typer.Option("--screen", help="Screen size for {SCREEN_*}.")]
MirrorSpec = Annotated[
    str | None,
    typer.Option(
        "--mirror",
        metavar="DIR|URL",
        help="Fetch the dataset's files (download steps, cloud_file getters) from this folder"
        " (as `cleanroom osworld mirror` fills it) or this base URL, never from the dataset;"
        " a file it lacks makes the run invalid.",
    ),
]
TaskPaths = Annotated[
    list[Path],
    typer.Argument(
        help="OSWorld's index (test_all.json, tasks beside it in examples/), task files or"
        " folders of them."
    ),
]


def _print_json(data: Any) -> None:
    typer.echo(json.dumps(data, indent=2, default=str))


def _load_or_exit(path: Path, as_json: bool) -> Task:
    try:
        return load_task(path)
    except TaskFileError as exc:
        _exit_invalid(Reason.CHECKER_ERROR, f"malformed task file: {exc}", as_json)
        raise  # unreachable: _exit_invalid always exits


def _exit_invalid(reason: Reason, why: str, as_json: bool) -> None:
    typer.echo(f"error: {why}", err=True)
    if as_json:
        _print_json(Outcome.invalid(reason, why).to_json())
    raise typer.Exit(EXIT_INVALID)


def _open_or_exit(spec: str, home: Path | None, user: str | None, as_json: bool) -> Guest:
    try:
        return open_guest(spec, home=str(home) if home else None, user=user)
    except UnknownGuestKind as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(EXIT_INVALID) from exc
    except GuestError as exc:
        _exit_invalid(Reason.CHECKER_ERROR, f"guest {spec!r} is not usable: {exc}", as_json)
        raise


def _settings(
    getter_timeout: float, password: str, screen: str, cache_dir: Path | None, mirror: str | None
) -> CheckSettings:
    try:
        width, height = (int(v) for v in screen.lower().split("x"))
    except ValueError as exc:
        raise typer.BadParameter(f"screen size must look like 1920x1080, got {screen!r}") from exc
    chosen = parse_mirror(mirror)
    return CheckSettings(
        client_password=password,
        screen_width=width,
        screen_height=height,
        getter_timeout=getter_timeout,
        cache_root=str(cache_dir) if cache_dir else None,
        mirror=chosen,
    )


def parse_mirror(mirror: str | None) -> Mirror | None:
    """The mirror ``--mirror`` names, or None; a usage error for an empty one or a folder
    that does not exist."""
    try:
        chosen = Mirror.parse(mirror) if mirror is not None else None
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--mirror") from exc
    if chosen is not None and not chosen.is_url and not Path(chosen.location).is_dir():
        raise typer.BadParameter(f"no folder {chosen.location}", param_hint="--mirror")
    return chosen


def _task_list(paths: list[Path]) -> TaskList:
    return read_task_list(list(paths))


@app.command("tasks", help="List each task's getters, metrics and setup steps, and the gaps.")
def tasks(paths: TaskPaths, as_json: AsJson = False) -> None:
    listed = _task_list(paths)
    rows = [task_support(t) for t in listed.tasks]
    errors = [str(e) for e in listed.errors]
    if as_json:
        _print_json({"tasks": [r.to_json() for r in rows], "errors": errors})
    else:
        _print_support_table(rows, errors)
    if errors:
        raise typer.Exit(EXIT_INVALID)


def _print_support_table(rows: list[TaskSupport], errors: list[str]) -> None:
    console = Console()
    table = Table(title="OSWorld tasks: what cleanroom can run")
    for name in ("task", "domain", "metrics", "getters", "setup steps", "unsupported"):
        table.add_column(name, overflow="fold")
    for r in rows:
        gaps = lacking(r)
        table.add_row(
            r.task_id[:8],
            r.domain,
            ", ".join(r.metrics),
            ", ".join(r.getters),
            ", ".join(r.steps),
            "\n".join(gaps) or "[green]-[/green]",
        )
    console.print(table)
    checkable = sum(r.checkable for r in rows)
    console.print(f"{len(rows)} tasks; the checker can score {checkable} of them.")
    for e in errors:
        console.print(f"[red]malformed:[/red] {e}")


@app.command("check", help="Run a task's checker in a guest; exit 0 success, 1 failure, 2 invalid.")
def check(
    task_file: Annotated[Path, typer.Argument(help="The task JSON.")],
    guest: GuestKind = "local",
    home: Annotated[Path | None, typer.Option("--home", help="Home of the guest user.")] = None,
    user: GuestUser = None,
    getter_timeout: GetterTimeout = 120.0,
    setup: Annotated[
        bool, typer.Option("--setup", help="Run the task's config steps first.")
    ] = False,
    last_action: Annotated[
        str | None,
        typer.Option(
            "--last-action", help='The agent\'s last action, e.g. FAIL or {"action_type":"FAIL"}.'
        ),
    ] = None,
    password: ClientPassword = "password",
    screen: ScreenSize = "1920x1080",
    cache_dir: Annotated[Path | None, typer.Option("--cache-dir", help="Task cache root.")] = None,
    mirror: MirrorSpec = None,
    as_json: AsJson = False,
) -> None:
    task = _load_or_exit(task_file, as_json)
    settings = _settings(getter_timeout, password, screen, cache_dir, mirror)
    with _open_or_exit(guest, home, user, as_json) as g:
        outcome = check_task(task, g, settings, last_action=last_action, run_setup=setup)
    if as_json:
        _print_json(outcome.to_json())
    else:
        _print_outcome(outcome)
    raise typer.Exit(outcome.exit_code)


def _print_outcome(outcome: Outcome) -> None:
    console = Console()
    style = status_style(outcome.status)
    line = f"[{style}]{outcome.status.value}[/{style}]  score={outcome.score}"
    if outcome.reason:
        line += f"  reason={outcome.reason.value}"
    console.print(line)
    if outcome.detail:
        console.print(outcome.detail)
    for g in outcome.details.get("getters", []):
        shown = g.get("error") or g.get("missing_file") or json.dumps(g.get("value"))[:120]
        console.print(f"  getter {g['role']}[{g['call']}] {g['type']}: {shown}")
    for m in outcome.details.get("metrics", []):
        console.print(f"  metric[{m['call']}] {m['func']}: {m.get('score', m.get('error'))}")


@app.command(
    "validate", help="Check a checker: fails at t=0, passes after the oracle, fails on a no-op."
)
def validate(
    task_file: Annotated[Path, typer.Argument(help="The task JSON.")],
    oracle: Annotated[str, typer.Option("--oracle", help="A shell command that solves the task.")],
    guest: GuestKind = "local",
    home: Annotated[
        Path | None, typer.Option("--home", help="Template home for fresh guests.")
    ] = None,
    user: GuestUser = None,
    getter_timeout: GetterTimeout = 120.0,
    action_timeout: Annotated[
        float, typer.Option("--action-timeout", help="Seconds for the oracle.")
    ] = 120.0,
    password: ClientPassword = "password",
    screen: ScreenSize = "1920x1080",
    mirror: MirrorSpec = None,
    as_json: AsJson = False,
) -> None:
    task = _load_or_exit(task_file, as_json)
    settings = _settings(getter_timeout, password, screen, None, mirror)
    with _open_or_exit(guest, home, user, as_json) as base:
        verdict = validate_task(task, base, oracle, settings, action_timeout=action_timeout)
    if as_json:
        _print_json(verdict.to_json())
    else:
        _print_verdict(verdict)
    raise typer.Exit(0 if verdict.valid else 1)


def _print_verdict(v: Validation) -> None:
    console = Console()
    table = Table(title=f"checker validation: {v.task_id}")
    for name in ("run", "expect", "got", "score", "reason", "ok"):
        table.add_column(name)
    for p in v.phases:
        o = p.outcome
        table.add_row(
            p.phase,
            p.expect.value,
            f"[{status_style(o.status)}]{o.status.value}[/]",
            "" if o.score is None else f"{o.score:g}",
            o.reason.value if o.reason else "",
            "[green]yes[/green]" if p.ok else "[red]no[/red]",
        )
    console.print(table)
    colour = "green" if v.valid else "red"
    console.print(f"verdict: [{colour}]{v.verdict}[/{colour}]")
    for problem in v.problems:
        console.print(f"  - {problem}")


@app.command(
    "coverage",
    help="Per domain: which tasks run here, which need a mirror, the live web, an account or"
    " VS Code, and which checker pieces each still lacks.",
)
def coverage(
    paths: TaskPaths,
    as_json: AsJson = False,
    markdown: Annotated[
        bool, typer.Option("--markdown", help="Print the docs page (docs/osworld-coverage.md).")
    ] = False,
) -> None:
    listed = _task_list(paths)
    rows = [task_coverage(t) for t in listed.tasks]
    errors = [str(e) for e in listed.errors]
    if as_json:
        _print_json(coverage_json(rows, errors))
    elif markdown:
        typer.echo(coverage_markdown(rows, " ".join(str(p) for p in paths)), nl=False)
    else:
        _print_coverage(rows, errors)
    if errors:
        raise typer.Exit(EXIT_INVALID)


def _print_coverage(rows: list[TaskCoverage], errors: list[str]) -> None:
    console = Console()
    for domain in dict.fromkeys(r.support.domain for r in rows):
        table = Table(title=f"OSWorld coverage: {domain}")
        for name in ("task", "runs", "needs", "lacks"):
            table.add_column(name, overflow="fold")
        for r in (r for r in rows if r.support.domain == domain):
            runs = (
                "[green]here[/green]"
                if r.runs_here
                else "[yellow]with a mirror[/yellow]"
                if r.runs_with_mirror
                else "no"
            )
            needs = ", ".join(n.value for n in r.ordered_needs())
            table.add_row(r.support.task_id, runs, needs or "-", "\n".join(r.lacks) or "-")
        console.print(table)
    summary = Table(title="OSWorld coverage by domain")
    heads = ["domain", "tasks", "every piece", "runs here", "with a mirror"]
    for name in [*heads, *(n.value for n in Need), "lacks a piece"]:
        if name == "domain":
            summary.add_column(name, no_wrap=True)
        else:
            summary.add_column(name, justify="right")
    for d in by_domain(rows):
        numbers = [d.tasks, d.complete, d.runs_here, d.runs_with_mirror]
        numbers += [d.needs[n] for n in Need] + [d.lacking]
        summary.add_row(d.domain, *(str(v) for v in numbers))
    console.print(summary)
    top = ", ".join(f"{m.piece} ({m.tasks}, {m.alone} alone)" for m in missing_pieces(rows)[:10])
    console.print(f"Most missed pieces (tasks lacking each): {top or 'none'}")
    for need in Need:
        console.print(f"Needs [bold]{need.value}[/bold]: a task that {NEED_RULES[need]}.")
    for e in errors:
        console.print(f"[red]malformed:[/red] {e}")


@app.command(
    "mirror",
    help="Fetch every file the tasks' download steps and cloud_file getters name into a"
    f" folder that --mirror reads; files already there are kept; {MANIFEST_NAME} lists"
    " each file's URL, size and sha256. With --made, make each file here instead (no"
    " network): a small file of the kind its name says, seeded by its URL, not OSWorld's.",
)
def mirror(
    paths: TaskPaths,
    to: Annotated[Path, typer.Option("--to", help="The mirror folder (made if missing).")],
    source: Annotated[
        str,
        typer.Option("--from", metavar="URL", help="Fetch from this copy of the dataset instead."),
    ] = DATASET_URL,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds per request.")] = 120.0,
    cap: Annotated[
        int, typer.Option("--max-file-bytes", help="Refuse a file larger than this.")
    ] = TASK_FILE_CAP_BYTES,
    made: Annotated[
        bool,
        typer.Option(
            "--made",
            help="Make each missing file here (a file of its kind, seeded by its URL) instead"
            " of fetching it; the index marks it as made.",
        ),
    ] = False,
    as_json: AsJson = False,
) -> None:
    listed = _task_list(paths)
    urls = [u for t in listed.tasks for u in task_file_urls(t)]
    saved_as: dict[str, tuple[str, ...]] = {}
    for t in listed.tasks:
        for url, names in task_file_names(t).items():
            saved_as[url] = tuple(dict.fromkeys(saved_as.get(url, ()) + names))
    report = fill_mirror(
        urls, to, source=source, timeout=timeout, cap=cap, make=made, saved_as=saved_as
    )
    errors = [str(e) for e in listed.errors]
    if as_json:
        _print_json({"tasks": len(listed.tasks), **report.to_json(), "errors": errors})
    else:
        _print_fill(report, len(listed.tasks), errors)
    if errors or not report.complete:
        raise typer.Exit(EXIT_INVALID)


def _print_fill(report: FillReport, tasks: int, errors: list[str]) -> None:
    console = Console()
    for f in report.files:
        if f.state is FileState.FAILED:
            console.print(f"[red]failed[/red] {f.url}: {f.why}")
    console.print(
        f"{len(report.files)} files of {tasks} tasks in {report.folder}:"
        f" {report.count(FileState.FETCHED)} fetched ({report.fetched_bytes} bytes),"
        f" {report.count(FileState.MADE)} made ({report.made_bytes} bytes),"
        f" {report.count(FileState.PRESENT)} already there,"
        f" {report.count(FileState.FAILED)} failed."
    )
    for e in errors:
        console.print(f"[red]malformed:[/red] {e}")
