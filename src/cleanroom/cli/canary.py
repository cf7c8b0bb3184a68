"""``cleanroom canary watch``: sample the canary env00 every 2 s and print each sample."""

from __future__ import annotations

import time
from typing import Annotated

import typer

from cleanroom.cli.shared import PoolRunFolder
from cleanroom.core.canary import CANARY_ENV, INTERVAL_S, CanarySample
from cleanroom.environments.errors import PoolError
from cleanroom.environments.providers import PoolProcess
from cleanroom.isolation.canary.watcher import CanaryWatcher
from cleanroom.store.rundb import RunStore

app = typer.Typer(no_args_is_help=True)


def _print(sample: CanarySample) -> None:
    stamp = time.strftime("%H:%M:%S", time.localtime(sample.at))
    window = "-" if sample.window is None else str(sample.window)
    if not sample.ok:
        typer.echo(f"{stamp} window={window} LOST {sample.detail}")
        return
    short = [(h or "-")[:10] for h in sample.state]
    sources = ",".join(sample.sources) or "-"
    typer.echo(
        f"{stamp} window={window} text={short[0]} windows={short[1]} clipboard={short[2]} "
        f"tokens-from={sources}"
    )


@app.command("watch", help="Sample env00 (focused text, window list, clipboard) every 2 s.")
def watch(
    run: PoolRunFolder = None,
    interval: Annotated[
        float, typer.Option("--interval", help="Seconds between samples.")
    ] = INTERVAL_S,
    count: Annotated[
        int, typer.Option("--count", help="Stop after this many samples (0: never).")
    ] = 0,
) -> None:
    """Run the canary watcher in the foreground, storing and printing every sample."""
    if interval <= 0:
        raise typer.BadParameter("--interval must be positive")
    try:
        pool = PoolProcess.connect(run)
        client = pool.client()
        handle = client.handle(CANARY_ENV)
    except PoolError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    store = RunStore.open(pool.run_dir, owner=False)  # the supervisor owns the run
    watcher = CanaryWatcher(handle, store, interval_s=interval, on_sample=_print)
    try:
        watcher.run_forever(until=lambda: count > 0 and len(watcher.samples) >= count)
    except KeyboardInterrupt:
        pass
    finally:
        store.close()
        client.close()
    lost = sum(1 for s in watcher.samples if not s.ok)
    typer.echo(f"{len(watcher.samples)} sample(s), {lost} lost")
