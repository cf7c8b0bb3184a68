"""``cleanroom run`` and ``cleanroom soak``: the harness loop from the command line."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from cleanroom.cli.shared import NewRunFolder, new_run_folder
from cleanroom.cli.shared import console as shared_console
from cleanroom.cluster.driver import ClusterConfig
from cleanroom.cluster.node_run import DEFAULT_NODE_RUNS, NodeSettings
from cleanroom.harness.loop import (
    HARNESS_ERROR,
    LoopConfig,
    LoopServices,
    OutsideAgentSettings,
    run_loop,
)
from cleanroom.harness.own_controls import leaky_controls
from cleanroom.harness.plan import UnknownCheck
from cleanroom.harness.report_step import print_report
from cleanroom.rollouts.osworld_outside import (
    CONNECTION_FILE,
    DEFAULT_EPISODE_S,
    DEFAULT_WAIT_S,
    OUTSIDE_TASK,
)
from cleanroom.rollouts.registry import TASKS

# Options that `run` and `soak` share.
DEFAULT_TASKS = ",".join(TASKS)
Envs = Annotated[int, typer.Option("--envs", min=1, max=32, help="Acting environments (+ env00).")]
Tasks = Annotated[
    str,
    typer.Option(
        "--tasks",
        help=f"Smoke tasks, comma-separated; '{OUTSIDE_TASK}': rollouts driven by agents"
        " from outside through OSWorld's interface (see --agent-port).",
    ),
]
AgentPort = Annotated[
    int,
    typer.Option(
        "--agent-port",
        min=0,
        max=65535,
        help=f"With --tasks {OUTSIDE_TASK}: serve OSWorld's DesktopEnv interface on"
        f" PORT (0: any free port) of --agent-host. Each environment's key, and the URL, are in"
        f" {CONNECTION_FILE} in the run folder.",
    ),
]
AgentHost = Annotated[
    str,
    typer.Option(
        "--agent-host",
        help="The address the OSWorld interface listens on: loopback by default; an"
        " address other machines reach when the agents run there (each route still needs"
        " its environment's key).",
    ),
]
AgentActionSpace = Annotated[
    str,
    typer.Option("--agent-action-space", help="The outside agents' OSWorld action space."),
]
AgentA11yTree = Annotated[
    bool,
    typer.Option(
        "--agent-a11y-tree/--no-agent-a11y-tree",
        help="Whether the outside agents' observations carry the environment's"
        " accessibility tree (OSWorld's XML), as OSWorld's do by default; reading it takes"
        " a few seconds per observation.",
    ),
]
AgentWait = Annotated[
    float,
    typer.Option(
        "--agent-wait",
        min=1,
        help="Seconds each environment waits for its outside agent to reset in each batch;"
        " an environment no agent came to gets no rollout in that batch.",
    ),
]
AgentEpisode = Annotated[
    float,
    typer.Option(
        "--agent-episode",
        min=1,
        help="Seconds an outside agent's episode may run; then the desktop is scored as it is.",
    ),
]
TrialsScale = Annotated[
    float,
    typer.Option(
        "--trials-scale", min=0.001, help="Multiply every test's trial count (at least 1)."
    ),
]
Tests = Annotated[
    str | None,
    typer.Option(
        "--tests", help="Only these isolation tests (comma-separated; on-demand ones too)."
    ),
]
OnDemand = Annotated[bool, typer.Option("--on-demand", help="Also run the on-demand tests.")]
WarmStandby = Annotated[
    bool,
    typer.Option(
        "--warm-standby/--no-warm-standby",
        help="Keep a spare slot of every acting environment up, so that a reset swaps it in"
        " instead of starting the programs again (twice the environments' memory).",
    ),
]
LEAKY_HELP = (
    "After the windows, prove every planned check in this run: each test under a leaky"
    " setup or fault it must detect, the canary's, the audit's and the sweep's planted leaks."
    " Without them no check is proven, so the isolation number is refused."
)
LeakyControls = Annotated[
    bool, typer.Option("--leaky-controls/--no-leaky-controls", help=LEAKY_HELP)
]


RayAddress = Annotated[
    str | None,
    typer.Option(
        "--ray",
        metavar="ADDRESS",
        help="Run across the nodes of the Ray cluster at ADDRESS (auto: the one this machine"
        " is in): one pool on every node that declares the 'desktops' resource, with as many"
        " acting environments as it declares (--envs is not used), its own canary, control"
        " and verify server; one run record here. Needs cleanroom\\[ray].",
    ),
]
OnNodeLoss = Annotated[
    str,
    typer.Option(
        "--on-node-loss",
        help="With --ray, when a node dies or is cut off mid-run: 'continue' with the nodes"
        " left, or 'stop' the run. Either way its window fails and its open rollouts are"
        " invalid (interrupted).",
    ),
]
NodeRuns = Annotated[
    Path,
    typer.Option(
        "--node-runs",
        help="With --ray, where each node keeps its own share of the run, on its own disk.",
    ),
]


def _split(text: str | None) -> tuple[str, ...] | None:
    if text is None:
        return None
    return tuple(t.strip() for t in text.split(",") if t.strip())


def _controls_step(s: LoopServices) -> None:
    leaky_controls(s, [p.name for p in s.plan])


@dataclass(frozen=True)
class OnRay:
    """``--ray``, ``--on-node-loss`` and ``--node-runs``: where the loop runs."""

    address: str | None
    on_node_loss: str
    node_runs: Path

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


def run(
    envs: Envs = 3,
    windows: Annotated[int, typer.Option("--windows", min=1, help="How many windows to run.")] = 1,
    window_minutes: Annotated[
        float,
        typer.Option(
            "--window-minutes",
            min=0,
            help="Keep running smoke rollouts until a window "
            "has lasted this long (0: one batch of rollouts and the tests).",
        ),
    ] = 0.0,
    tasks: Tasks = DEFAULT_TASKS,
    run_dir: NewRunFolder = None,
    trials_scale: TrialsScale = 1.0,
    tests: Tests = None,
    on_demand: OnDemand = False,
    controls: LeakyControls = True,
    warm_standby: WarmStandby = True,
    ray_address: RayAddress = None,
    on_node_loss: OnNodeLoss = "continue",
    node_runs: NodeRuns = DEFAULT_NODE_RUNS,
    agent_port: AgentPort = 0,
    agent_host: AgentHost = "127.0.0.1",
    agent_action_space: AgentActionSpace = "pyautogui",
    agent_wait: AgentWait = DEFAULT_WAIT_S,
    agent_episode: AgentEpisode = DEFAULT_EPISODE_S,
    agent_a11y_tree: AgentA11yTree = True,
) -> None:
    """Run windows of smoke rollouts, isolation tests and the canary; then the audit."""
    folder = new_run_folder(run_dir, "run")
    _go(
        OnRay(ray_address, on_node_loss, node_runs),
        lambda: LoopConfig(
            run_dir=folder,
            envs=envs,
            windows=windows,
            window_minutes=window_minutes,
            tasks=_split(tasks) or (),
            trials_scale=trials_scale,
            tests=_split(tests),
            on_demand=on_demand,
            leaky_controls=controls,
            warm_standby=warm_standby,
            outside_agents=OutsideAgentSettings(
                agent_port,
                agent_host,
                agent_action_space,
                agent_wait,
                agent_episode,
                agent_a11y_tree,
            ),
        ),
    )


def soak(
    hours: Annotated[float, typer.Option("--hours", min=0.001, help="Run windows for this long.")],
    envs: Envs = 3,
    window_minutes: Annotated[
        float, typer.Option("--window-minutes", min=0, help="Window length.")
    ] = 30.0,
    tasks: Tasks = DEFAULT_TASKS,
    run_dir: NewRunFolder = None,
    trials_scale: TrialsScale = 1.0,
    tests: Tests = None,
    on_demand: OnDemand = False,
    controls: LeakyControls = True,
    warm_standby: WarmStandby = True,
    ray_address: RayAddress = None,
    on_node_loss: OnNodeLoss = "continue",
    node_runs: NodeRuns = DEFAULT_NODE_RUNS,
    agent_port: AgentPort = 0,
    agent_host: AgentHost = "127.0.0.1",
    agent_action_space: AgentActionSpace = "pyautogui",
    agent_wait: AgentWait = DEFAULT_WAIT_S,
    agent_episode: AgentEpisode = DEFAULT_EPISODE_S,
    agent_a11y_tree: AgentA11yTree = True,
) -> None:
    """The harness loop for hours, with the soak trial counts."""
    folder = new_run_folder(run_dir, "soak")
    _go(
        OnRay(ray_address, on_node_loss, node_runs),
        lambda: LoopConfig(
            run_dir=folder,
            envs=envs,
            windows=None,
            hours=hours,
            window_minutes=window_minutes,
            tasks=_split(tasks) or (),
            trials_scale=trials_scale,
            soak=True,
            tests=_split(tests),
            on_demand=on_demand,
            job="soak",
            leaky_controls=controls,
            warm_standby=warm_standby,
            outside_agents=OutsideAgentSettings(
                agent_port,
                agent_host,
                agent_action_space,
                agent_wait,
                agent_episode,
                agent_a11y_tree,
            ),
        ),
    )
