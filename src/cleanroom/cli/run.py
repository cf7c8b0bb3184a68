"""``cleanroom run`` and ``cleanroom soak``: the harness loop from the command line."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer
from pydantic import Field, ValidationError
from rich.console import Console

from cleanroom.cli.model_options import reasons, with_settings
from cleanroom.cli.shared import NewRunFolder, new_run_folder
from cleanroom.cli.shared import console as shared_console
from cleanroom.cluster.driver import ClusterConfig
from cleanroom.cluster.node_run import DEFAULT_NODE_RUNS, NodeSettings
from cleanroom.harness.loop import HARNESS_ERROR, LoopServices, run_loop
from cleanroom.harness.own_controls import leaky_controls
from cleanroom.harness.plan import UnknownCheck
from cleanroom.harness.report_step import print_report
from cleanroom.harness.settings import (
    CliOption,
    LoopConfig,
    RunSettings,
    Settings,
    SoakSettings,
)


class OnRay(Settings):
    """``--ray``, ``--on-node-loss`` and ``--node-runs``: where the loop runs."""

    address: Annotated[str | None, CliOption("--ray", metavar="ADDRESS")] = Field(
        default=None,
        description="Run across the nodes of the Ray cluster at ADDRESS (auto: the one this"
        " machine is in): one pool on every node that declares the 'desktops' resource, with"
        " as many acting environments as it declares (--envs is not used), its own canary,"
        " control and verify server; one run record here. Needs cleanroom\\[ray].",
    )
    on_node_loss: str = Field(
        default="continue",
        description="With --ray, when a node dies or is cut off mid-run: 'continue' with the"
        " nodes left, or 'stop' the run. Either way its window fails and its open rollouts"
        " are invalid (interrupted).",
    )
    node_runs: Path = Field(
        default=DEFAULT_NODE_RUNS,
        description="With --ray, where each node keeps its own share of the run, on its own disk.",
    )

    def cluster_config(self, config: LoopConfig) -> ClusterConfig:
        """The run of ``config`` across the cluster's nodes, each with the same settings."""
        if self.address is None:
            raise ValueError("no Ray address")
        key = f"{config.run_dir.resolve().name}-{uuid.uuid4().hex[:8]}"
        settings = NodeSettings.of_loop(config, run_key=key, node_runs=str(self.node_runs))
        return ClusterConfig(
            address=self.address,
            run_dir=config.run_dir,
            settings=settings,
            windows=config.windows,
            hours=config.hours,
            on_node_loss=self.on_node_loss,
            job=config.job,
        )


def _controls_step(s: LoopServices) -> None:
    leaky_controls(s, [p.name for p in s.plan])


def _run_on_ray(config: ClusterConfig, console: Console) -> tuple[str, Path, str | None, int]:
    from cleanroom.cluster.driver import run_across_nodes
    from cleanroom.core.errors import ExtraNotInstalledError
    from cleanroom.ray_cluster.session import RayUnavailable

    try:
        result = run_across_nodes(config, console)
    except (RayUnavailable, ExtraNotInstalledError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    return result.status, result.run_dir, result.error, result.exit_code


def _go(on_ray: OnRay, build: Callable[[], LoopConfig]) -> None:
    try:
        config = build()
        cluster = on_ray.cluster_config(config) if on_ray.address is not None else None
    except ValidationError as exc:
        raise typer.BadParameter(reasons(exc)) from exc
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from exc
    console = shared_console()
    try:
        if cluster is not None:
            status, run_dir, error, exit_code = _run_on_ray(cluster, console)
        else:
            steps = [_controls_step] if config.leaky_controls else []
            result = run_loop(config, console, after_windows=steps)
            status, run_dir, error, exit_code = (
                result.status,
                result.run_dir,
                result.error,
                result.exit_code,
            )
    except UnknownCheck as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    console.print(f"Run {status}: {run_dir}")
    if error:
        where = " (traceback in the run folder)" if (run_dir / HARNESS_ERROR).exists() else ""
        console.print(f"[red]{error}[/]{where}")
    print_report(run_dir, console)
    raise typer.Exit(exit_code)


@with_settings
def run(
    windows: Annotated[int, typer.Option("--windows", min=1, help="How many windows to run.")] = 1,
    *,
    settings: RunSettings,
    run_dir: NewRunFolder = None,
    on_ray: OnRay,
) -> None:
    """Run windows of smoke rollouts, isolation tests and the canary; then the audit."""
    folder = new_run_folder(run_dir, "run")
    _go(on_ray, lambda: LoopConfig(**dict(settings), run_dir=folder, windows=windows))


@with_settings
def soak(
    hours: Annotated[float, typer.Option("--hours", min=0.001, help="Run windows for this long.")],
    *,
    settings: SoakSettings,
    run_dir: NewRunFolder = None,
    on_ray: OnRay,
) -> None:
    """The harness loop for hours, with the soak trial counts."""
    folder = new_run_folder(run_dir, "soak")
    _go(
        on_ray,
        lambda: LoopConfig(
            **dict(settings), run_dir=folder, windows=None, hours=hours, soak=True, job="soak"
        ),
    )
