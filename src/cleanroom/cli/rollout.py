"""``cleanroom rollout --task {rename,writer,form} --env envNN``: one smoke rollout."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from cleanroom.cli.shared import AsJson, PoolRunFolder
from cleanroom.core.canary import CANARY_ENV
from cleanroom.core.outcomes import EXIT_INVALID
from cleanroom.environments.errors import PoolError
from cleanroom.environments.providers import PoolProcess
from cleanroom.rollouts.registry import TASKS
from cleanroom.rollouts.smoke_rollout import run_rollout


def rollout(
    task: Annotated[str, typer.Option("--task", help=f"One of: {', '.join(TASKS)}.")],
    env: Annotated[str, typer.Option("--env", help="The environment to run in.")] = "env01",
    run: PoolRunFolder = None,
    window: Annotated[int, typer.Option("--window", help="The window the rollout belongs to.")] = 0,
    do_nothing: Annotated[
        bool, typer.Option("--do-nothing", help="Run a policy that does nothing (must fail).")
    ] = False,
    verify_url: Annotated[
        str | None, typer.Option("--verify-url", help="Verify server URL.")
    ] = None,
    verify_key: Annotated[
        str | None, typer.Option("--verify-key", help="Verify server key.")
    ] = None,
    as_json: AsJson = False,
) -> None:
    """Run one smoke rollout against the running pool and print its outcome."""
    if task not in TASKS:
        raise typer.BadParameter(f"--task must be one of {', '.join(TASKS)}")
    if env == CANARY_ENV:
        raise typer.BadParameter(f"{CANARY_ENV} is the canary and never receives an action")
    try:
        pool = PoolProcess.connect(run)
        report = run_rollout(
            task,
            env,
            pool,
            window=window,
            do_nothing=do_nothing,
            verify_url=verify_url,
            verify_key=verify_key,
        )
    except PoolError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(EXIT_INVALID) from exc
    o = report.outcome
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "token": str(report.token),
                    "task": task,
                    "env": env,
                    "seconds": round(report.seconds, 2),
                    **o.to_json(),
                },
                default=str,
            )
        )
    else:
        reason = f" reason={o.reason.value} ({o.detail})" if o.reason else ""
        typer.echo(
            f"{task} in {env}: {o.status.value} score={o.score}{reason} "
            f"token={report.token} ({report.seconds:.1f} s)"
        )
    raise typer.Exit(o.exit_code)
