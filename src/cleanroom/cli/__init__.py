"""The ``cleanroom`` command line: one sub-module per command group."""

from __future__ import annotations

import logging
from typing import Annotated

import typer

from cleanroom import __version__
from cleanroom.cli import (
    audit,
    canary,
    control,
    demo,
    envs,
    gc,
    isolation,
    osworld,
    redteam,
    report,
    rollout,
    run,
    serve,
    tokens,
    verify,
)

app = typer.Typer(
    name="cleanroom",
    help="Rewards you can trust: forge-proof verifiers and proven isolation checks.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"cleanroom {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Rewards you can trust: forge-proof verifiers and proven isolation checks."""


app.add_typer(osworld.app, name="osworld", help="Run and validate OSWorld task checkers.")
app.add_typer(tokens.app, name="tokens", help="Mint tokens and find them in files and trees.")
app.command("serve", help="Run the verify server (leases, form, frames, audit).")(serve.serve)
app.command(
    "verify", help="Run a container task's agent phase, then verify it (sealed, cleared, shared)."
)(verify.verify)
app.command("audit", help="Audit a dataset of tasks: broken, flaky, leaky and forgeable ones.")(
    audit.audit
)
app.command(
    "redteam", help="Run every forging attack against every verifier mode and print the matrix."
)(redteam.redteam)
app.add_typer(
    envs.app, name="envs", help="Start, inspect and stop the pool of desktop environments."
)
app.command(
    "rollout", help="Run one scripted smoke rollout (rename, writer, form) in an environment."
)(rollout.rollout)
app.add_typer(canary.app, name="canary", help="Watch the canary environment env00.")
app.command(
    "control", help="Run the positive control: forced interference the detectors must see."
)(control.control)
app.add_typer(isolation.app, name="isolation", help="Run isolation tests and their leaky controls.")
app.command(
    "run", help="Run windows of smoke rollouts, isolation tests and the canary; then the audit."
)(run.run)
app.command("soak", help="The harness loop for hours, with the soak trial counts.")(run.soak)
app.command(
    "report", help="Print a run's report: the isolation number next to its control, or why not."
)(report.report)
app.command("demo", help="Run the main job end to end on the embedded defaults.")(demo.demo)
app.command(
    "gc", help="Remove what cleanroom's ended processes left: containers, networks, pools."
)(gc.gc)


def main() -> None:
    """Entry point of the ``cleanroom`` console script."""
    # Warnings from background parts (the watchdog's recoveries, the verify server's
    # refusals) go to stderr with their time and source.
    logging.basicConfig(
        level=logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        datefmt="%H:%M:%S",
    )
    app()
