"""``cleanroom osworld``: report on, run and validate OSWorld task checkers."""

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
from cleanroom.verifiers.osworld.evaluator import check_task
from cleanroom.verifiers.osworld.settings import CheckSettings
from cleanroom.verifiers.osworld.support import TaskSupport, task_support
from cleanroom.verifiers.osworld.task import Task, TaskFileError, find_task_files, load_task
from cleanroom.verifiers.osworld.validate import Validation, validate_task

app = typer.Typer(no_args_is_help=True)

_GUEST_HELP = f"Where to run: {' or '.join(GUEST_SPECS)}."

# Options that `check` and `validate` share.
GuestKind = Annotated[str, typer.Option("--guest", help=_GUEST_HELP)]
GuestUser = Annotated[str | None, typer.Option("--user", help="Run as this user.")]
GetterTimeout = Annotated[float, typer.Option("--getter-timeout", help="Seconds per getter.")]
ClientPassword = Annotated[str, typer.Option("--client-password", help="For {CLIENT_PASSWORD}.")]
ScreenSize = Annotated[str, typer.Option("--screen", help="Screen size for {SCREEN_*}.")]


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
    getter_timeout: float, password: str, screen: str, cache_dir: Path | None
) -> CheckSettings:
    try:
        width, height = (int(v) for v in screen.lower().split("x"))
    except ValueError as exc:
        raise typer.BadParameter(f"screen size must look like 1920x1080, got {screen!r}") from exc
    return CheckSettings(
        client_password=password,
        screen_width=width,
        screen_height=height,
        getter_timeout=getter_timeout,
        cache_root=str(cache_dir) if cache_dir else None,
    )


@app.command("tasks", help="List each task's getters, metrics and setup steps, and the gaps.")
def tasks(
    paths: Annotated[list[Path], typer.Argument(help="Task files or folders of them.")],
    as_json: AsJson = False,
) -> None:
    rows: list[TaskSupport] = []
    errors: list[str] = []
    for path in find_task_files(list(paths)):
        try:
            rows.append(task_support(load_task(path)))
        except TaskFileError as exc:
            errors.append(str(exc))
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
        gaps = [f"getter {g}" for g in r.missing_getters]
        gaps += [f"metric {m}" for m in r.missing_metrics]
        gaps += [f"step {s}" for s in r.missing_steps]
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
    as_json: AsJson = False,
) -> None:
    task = _load_or_exit(task_file, as_json)
    settings = _settings(getter_timeout, password, screen, cache_dir)
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
    as_json: AsJson = False,
) -> None:
    task = _load_or_exit(task_file, as_json)
    settings = _settings(getter_timeout, password, screen, None)
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
