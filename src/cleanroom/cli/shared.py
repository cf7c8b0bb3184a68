"""What several commands share: the console they print to and the run folder they make."""

from __future__ import annotations

import logging
import os
import time
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from cleanroom.docker_layer import PODMAN_HOST
from cleanroom.verifiers.container.runtime.docker import stop_every_runtime


def console() -> Console:
    """The terminal's console, or a 120-column one when output goes to a file or a pipe
    (Rich would otherwise cut tables to 80 columns)."""
    return Console() if Console().is_terminal else Console(width=120)


# The user's own mistake, before anything ran: a task folder that is missing or cannot be
# read as a task, a run folder that is not there. Apart from 2 (an outcome the
# infrastructure caused) so that a script can tell the two apart.
EXIT_USAGE = 4


def usage_error(lines: list[str]) -> typer.Exit:
    """Each of ``lines`` on stderr as an error; the exit to raise."""
    for line in lines:
        typer.echo(f"error: {line}", err=True)
    return typer.Exit(EXIT_USAGE)


def remove_what_was_made(signal_name: str) -> None:
    """On a stop signal: every container and network this process made is removed and
    every container it froze is thawed (`stop_every_runtime`), before it exits."""
    Console(stderr=True).print(
        f"[bold red]{signal_name}[/]: removing the containers and networks this run made",
        highlight=False,
    )
    stop_every_runtime()


def show_progress() -> None:
    """Show the long work a person waits for (an image build) on stderr, one line each."""
    progress = logging.getLogger("cleanroom.progress")
    if not progress.handlers:
        handler = logging.StreamHandler()  # stderr
        handler.setFormatter(logging.Formatter("%(message)s"))
        progress.addHandler(handler)
        progress.setLevel(logging.INFO)
        progress.propagate = False


def new_run_folder(run_dir: Path | None, prefix: str) -> Path:
    """``run_dir``, or ``runs/<prefix>-<time>``; exits 2 if it holds anything already."""
    folder = run_dir or Path("runs") / time.strftime(f"{prefix}-%Y%m%d-%H%M%S")
    if folder.exists() and any(folder.iterdir()):
        typer.echo(f"error: {folder} exists and is not empty", err=True)
        raise typer.Exit(2)
    return folder


# The options more than one command takes, with their help written once.
ImageMap = Annotated[
    list[str] | None,
    typer.Option(
        "--image-map",
        metavar="FROM=TO",
        help="Build with image TO wherever a task names base image FROM (a Dockerfile's "
        "FROM line or docker_image), for offline use; repeatable.",
    ),
]
ImageMapFile = Annotated[
    Path | None,
    typer.Option(
        "--image-map-file",
        metavar="FILE",
        help='A TOML file whose \\[image_map] table maps FROM = "TO" the same way; a pair '
        "given with --image-map wins over the file's.",
    ),
]
AsJson = Annotated[
    bool, typer.Option("--json", help="Print JSON (for scripts) instead of tables and text.")
]
PoolRunFolder = Annotated[
    Path | None,
    typer.Option("--run", help="Run folder of a running pool (default: the last pool started)."),
]
NewRunFolder = Annotated[
    Path | None,
    typer.Option("--run", help="Run folder to create (default: a new one under runs/)."),
]


class ContainerEnvironment(StrEnum):
    """Where container tasks run: Docker, or podman through its Docker-compatible API."""

    DOCKER = "docker"
    PODMAN = "podman"


Environment = Annotated[
    ContainerEnvironment,
    typer.Option(
        "--environment",
        help="Run the task containers on Docker (DOCKER_HOST or the local daemon) or on "
        "podman (its API service at " + PODMAN_HOST.removeprefix("unix://") + ").",
    ),
]


def use_environment(environment: ContainerEnvironment) -> None:
    """Point this process, and every process and Ray task it starts, at ``environment``'s
    daemon: podman's API takes the place of ``DOCKER_HOST``; Docker leaves it as it is."""
    if environment is ContainerEnvironment.PODMAN:
        os.environ["DOCKER_HOST"] = PODMAN_HOST
