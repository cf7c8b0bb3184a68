"""``cleanroom control [--json]``: the positive control, stored with the not-claimed sentence."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated

import typer

from cleanroom.cli.shared import AsJson
from cleanroom.core.outcomes import EXIT_INVALID
from cleanroom.core.publish import NOT_CLAIMED
from cleanroom.environments.errors import PoolError
from cleanroom.environments.providers import NoPool, PoolProcess, current_run_dir
from cleanroom.isolation.controls.positive import run_and_store_control
from cleanroom.store.rundb import DB_NAME, RunBusy, RunStore


def _open_store(run: Path | None) -> RunStore:
    if run is None:
        try:
            run = PoolProcess.connect(current_run_dir()).run_dir
        except (NoPool, PoolError):
            run = Path("runs") / time.strftime("control-%Y%m%d-%H%M%S")
    if not (run / DB_NAME).exists():
        return RunStore.create(run)
    try:
        return RunStore.open(run)
    except RunBusy:
        return RunStore.open(run, owner=False)  # a live supervisor owns it: write beside it


def control(
    run: Annotated[
        Path | None,
        typer.Option(
            "--run",
            help="Run folder to record into (default: the running pool's, else a new one "
            "under runs/).",
        ),
    ] = None,
    rounds: Annotated[int, typer.Option("--rounds", help="Typing rounds.")] = 3,
    chars: Annotated[int, typer.Option("--chars", help="Characters per side per round.")] = 40,
    clipboard_trials: Annotated[
        int, typer.Option("--clipboard-trials", help="Clipboard trials.")
    ] = 20,
    as_json: AsJson = False,
) -> None:
    """Run the positive control and store its result; exit 0 only if it fired."""
    if rounds < 1 or chars < 2 or clipboard_trials < 1:
        raise typer.BadParameter("rounds, chars and clipboard trials must be positive")
    store = _open_store(run)
    try:
        result = run_and_store_control(
            store, typing_rounds=rounds, chars=chars, clipboard_trials=clipboard_trials
        )
    except (PoolError, TimeoutError, OSError) as exc:
        typer.echo(f"error: the control could not run: {exc}", err=True)
        raise typer.Exit(EXIT_INVALID) from exc
    finally:
        store.close()
    data = {
        "fired": result.fired,
        "typing_cross": result.typing_cross,
        "typing_trials": result.typing_trials,
        "clipboard_cross": result.clipboard_cross,
        "clipboard_trials": result.clipboard_trials,
        "run_dir": str(store.run_dir),
        "not_claimed": NOT_CLAIMED,
    }
    if as_json:
        typer.echo(json.dumps(data, indent=2))
    else:
        verdict = "FIRED" if result.fired else "DID NOT FIRE"
        typer.echo(
            f"positive control {verdict}: typing {result.typing_cross} of {result.typing_trials} "
            f"rounds cross-delivered, clipboard {result.clipboard_cross} of "
            f"{result.clipboard_trials} trials cross-read (run {store.run_dir})"
        )
        typer.echo(f"not claimed: {NOT_CLAIMED}")
    raise typer.Exit(0 if result.fired else 1)
