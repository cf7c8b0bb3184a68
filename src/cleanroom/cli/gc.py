"""``cleanroom gc``: remove what cleanroom's processes left when they ended without
cleaning up (killed with SIGKILL, a machine that lost power), by cleanroom's labels and
records, never anything else."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from cleanroom.cli.shared import AsJson, ContainerEnvironment, Environment, use_environment
from cleanroom.environments.providers import collect_garbage
from cleanroom.verifiers.container.runtime import RuntimeUnavailable
from cleanroom.verifiers.container.runtime.docker import DockerRuntime
from cleanroom.verifiers.container.runtime.docker.leftovers import collect


def gc(
    environment: Environment = ContainerEnvironment.DOCKER,
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="Only list what would be removed."),
    ] = False,
    as_json: AsJson = False,
) -> None:
    """Remove what cleanroom's ended processes left: the containers and networks of
    verifications, audits and red-team runs whose process has ended (by their owner
    label), and the pools of desktop environments whose owner has ended (their
    accounts, sandboxes, containers and folders). What a running process owns, what
    another machine's process made and anything without cleanroom's labels are left.
    Exits 0, or 2 when the daemon does not answer or something could not be removed."""
    use_environment(environment)
    try:
        docker = DockerRuntime.connect().docker
    except RuntimeUnavailable as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    verifications = collect(docker, dry_run=dry_run)
    pools = None if dry_run else collect_garbage()
    if as_json:
        payload = {
            "verifications": verifications.to_json(),
            "pools": pools.to_json() if pools is not None else None,
        }
        typer.echo(json.dumps(payload, indent=2))
    else:
        for line in verifications.removed:
            typer.echo(f"removed: {line}")
        for line in verifications.left:
            typer.echo(f"left: {line}")
        for line in verifications.problems:
            typer.echo(f"could not remove: {line}", err=True)
        if pools is None:
            typer.echo("pools: not looked at in a dry run (see `cleanroom envs status`)")
        else:
            for line in pools.lines() or ["orphans: none found"]:
                typer.echo(f"pools: {line}")
    problems = verifications.problems or (
        pools is not None and any(r.problems for r in pools.removed)
    )
    raise typer.Exit(2 if problems else 0)
