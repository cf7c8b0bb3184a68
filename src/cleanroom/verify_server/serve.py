"""Running the verify server in this process: key, database, socket, uvicorn; and its
command line (`serve`), which ``cleanroom serve`` and ``python -m cleanroom.verify_server``
share."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

import typer
import uvicorn
from starlette.types import ASGIApp

from cleanroom.lifecycle import OWNER_PID_OPTION, die_with_owner
from cleanroom.store.submissions import StoreError, SubmissionStore
from cleanroom.verify_server.app import create_app
from cleanroom.verify_server.auth import KeyFileError, load_or_create_key
from cleanroom.verify_server.budget import (
    MAX_SUBMISSIONS_PER_LEASE,
    MAX_SUBMITTED_BYTES_PER_LEASE,
    LeaseBudget,
)


@dataclass(frozen=True)
class ServeConfig:
    """Where the server listens and keeps its database and key."""

    host: str = "127.0.0.1"
    port: int = 8787
    db: Path = Path("verify.sqlite3")
    key_file: Path = Path("verify.key")
    port_file: Path | None = None
    lease_budget: LeaseBudget = field(default_factory=LeaseBudget)


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (port 0: a free port the kernel picks)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def write_port_file(path: Path, port: int) -> None:
    """Write the port atomically, so a reader never sees a half-written number."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(f"{port}\n", encoding="ascii")
    os.replace(tmp, path)


def uvicorn_config(app: ASGIApp) -> uvicorn.Config:
    """The uvicorn settings the verify server runs with (uvloop and httptools when present)."""
    return uvicorn.Config(
        app,
        loop="auto",
        http="auto",
        lifespan="off",
        access_log=False,
        log_level="warning",
        # Never believe X-Forwarded-* from whoever connects.
        proxy_headers=False,
        server_header=False,
        timeout_keep_alive=30,
    )


class _Server(uvicorn.Server):
    """uvicorn, except that SIGINT and SIGTERM are a clean stop (exit 0, database closed)
    rather than a signal re-raised after shutdown: a harness stops the server on purpose."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        sigs = (signal.SIGINT, signal.SIGTERM)
        previous = {sig: signal.signal(sig, self.handle_exit) for sig in sigs}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def run(config: ServeConfig, announce: bool = True) -> None:
    """Serve until SIGINT or SIGTERM. The socket is listening before the port is published,
    so a harness that reads the port file can connect at once."""
    key = load_or_create_key(config.key_file)
    store = SubmissionStore.open(config.db)
    try:
        store.checkpoint_in_background()  # commits are the hot path: no disk sync in them
        sock = bind(config.host, config.port)
        port = int(sock.getsockname()[1])
        if config.port_file is not None:
            write_port_file(config.port_file, port)
        if announce:
            print(f"cleanroom verify server listening on http://{config.host}:{port}", flush=True)
        app = create_app(store, key, lease_budget=config.lease_budget)
        _Server(uvicorn_config(app)).run(sockets=[sock])
    finally:
        store.close()


def serve(
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", min=0, max=65535, help="Port; 0 picks a free one.")
    ] = 8787,
    db: Annotated[Path, typer.Option("--db", help="SQLite database file.")] = Path(
        "verify.sqlite3"
    ),
    key_file: Annotated[
        Path, typer.Option("--key-file", help="Harness key file; created (mode 0600) if missing.")
    ] = Path("verify.key"),
    port_file: Annotated[
        Path | None,
        typer.Option("--port-file", help="Write the port actually used here once listening."),
    ] = None,
    owner_pid: Annotated[
        int | None,
        typer.Option(
            OWNER_PID_OPTION, hidden=True, help="Stop when this process (the parent) dies."
        ),
    ] = None,
    lease_submissions: Annotated[
        int,
        typer.Option(
            "--lease-submissions", min=1, help="Form submissions one lease may make (then 429)."
        ),
    ] = MAX_SUBMISSIONS_PER_LEASE,
    lease_bytes: Annotated[
        int,
        typer.Option("--lease-bytes", min=1, help="Bytes one lease may submit in all (then 413)."),
    ] = MAX_SUBMITTED_BYTES_PER_LEASE,
) -> None:
    """Run the verify server until interrupted."""
    if owner_pid is not None:
        die_with_owner(owner_pid)
    budget = LeaseBudget(lease_submissions, lease_bytes)
    try:
        run(
            ServeConfig(
                host=host,
                port=port,
                db=db,
                key_file=key_file,
                port_file=port_file,
                lease_budget=budget,
            )
        )
    except (KeyFileError, StoreError, OSError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
