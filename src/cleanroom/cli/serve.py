"""``cleanroom serve``: run the verify server (leases, form, frames, audit)."""

from __future__ import annotations

from pathlib import Path

import typer

from cleanroom.store.submissions import StoreError
from cleanroom.verify_server.auth import KeyFileError
from cleanroom.verify_server.runner import ServeConfig, run


def serve(
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on."),
    port: int = typer.Option(8787, "--port", min=0, max=65535, help="Port; 0 picks a free one."),
    db: Path = typer.Option(Path("verify.sqlite3"), "--db", help="SQLite database file."),  # noqa: B008
    key_file: Path = typer.Option(  # noqa: B008
        Path("verify.key"), "--key-file", help="Harness key file; created (mode 0600) if missing."
    ),
    port_file: Path | None = typer.Option(  # noqa: B008
        None, "--port-file", help="Write the port actually used here once listening."
    ),
) -> None:
    """Run the verify server until interrupted."""
    try:
        run(ServeConfig(host=host, port=port, db=db, key_file=key_file, port_file=port_file))
    except (KeyFileError, StoreError, OSError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
