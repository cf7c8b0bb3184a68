"""``cleanroom verify``: run container tasks' agent phases, then verify them in one mode;
several tasks run side by side (``--jobs``), or as Ray tasks on a cluster's Docker nodes
(``--ray``)."""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

from cleanroom.cli.shared import (
    AsJson,
    ContainerEnvironment,
    Environment,
    ImageMap,
    ImageMapFile,
    remove_what_was_made,
    show_progress,
    usage_error,
    use_environment,
)
from cleanroom.cli.styles import status_style
from cleanroom.core.errors import BudgetTooShortError, ExtraNotInstalledError
from cleanroom.core.outcomes import (
    EXIT_AGENT_FAULT,
    EXIT_FAILURE,
    EXIT_INVALID,
    EXIT_SUCCESS,
    Outcome,
)
from cleanroom.harness.stopping import exit_on_signals
from cleanroom.integrations.container import verify_container
from cleanroom.verifiers.container.modes import DEFAULT_MODE, Mode
from cleanroom.verifiers.container.side_by_side import side_by_side
from cleanroom.verifiers.container.task import TaskError, load_task
from cleanroom.verifiers.container.verify import AgentSpec, VerifyOptions, verify_path

if TYPE_CHECKING:
    from cleanroom.integrations.ray_verify import RayRequest, RayVerification


def verify(
    task_dirs: Annotated[
        list[Path],
        typer.Argument(
            metavar="TASK_DIR...",
            help="Harbor-layout task folders (task.toml, environment/, tests/, solution/).",
        ),
    ],
    solution: Annotated[
        bool, typer.Option("--solution", help="Run solution/solve.sh as the agent.")
    ] = False,
    noop: Annotated[bool, typer.Option("--noop", help="Run no agent at all.")] = False,
    agent: Annotated[
        str | None,
        typer.Option("--agent", metavar="CMD", help="Run CMD with bash -c as the agent."),
    ] = None,
    mode: Annotated[
        Mode,
        typer.Option(
            "--mode", help="sealed (default), cleared, or shared (demonstrates attacks only)."
        ),
    ] = DEFAULT_MODE,
    as_json: AsJson = False,
    keep: Annotated[
        bool,
        typer.Option(
            "--keep",
            help="Keep the containers and host folders for inspection (in sealed mode the "
            "agent's container is kept paused: docker unpause it to look inside).",
        ),
    ] = False,
    image_map: ImageMap = None,
    environment: Environment = ContainerEnvironment.DOCKER,
    artifacts_dir: Annotated[
        Path | None,
        typer.Option(
            "--artifacts-dir",
            metavar="DIR",
            help="Collect the agent's artifacts (/logs/artifacts and the task's artifacts) "
            "into DIR as Harbor does, with its manifest.json.",
        ),
    ] = None,
    image_map_file: ImageMapFile = None,
    jobs: Annotated[
        int,
        typer.Option("--jobs", min=1, help="Verify this many tasks at once (with several tasks)."),
    ] = 1,
    container: Annotated[
        str | None,
        typer.Option(
            "--container",
            metavar="NAME",
            help="Verify this running container (a name or ID), in which an agent of "
            "another harness already acted, instead of running an agent phase: one task.",
        ),
    ] = None,
    step: Annotated[
        str | None,
        typer.Option(
            "--step",
            metavar="NAME",
            help="With --container, in a multi-step task: the step the agent just did.",
        ),
    ] = None,
    budget: Annotated[
        float | None,
        typer.Option(
            "--budget",
            metavar="SECONDS",
            min=0.001,
            help="With --container: the time the whole verification may take; refused "
            "(exit 2) when no verification fits in it.",
        ),
    ] = None,
    ray_address: Annotated[
        str | None,
        typer.Option(
            "--ray",
            metavar="ADDRESS",
            help="Run each verification as a Ray task on this cluster (host:port, or auto), "
            "on nodes declaring the 'docker' resource; with --container, on the node whose "
            "daemon holds it. The task folders must be at the same path on every node.",
        ),
    ] = None,
) -> None:
    """Verify container tasks; exit 0 success, 1 failure, 2 invalid (the infrastructure's
    fault, excluded), 3 a failure scored 0 for the agent's own act (tamper, ...). With
    several tasks the exit code is the most serious of theirs: 2, then 3, then 1, then 0.
    A task folder that is missing or is no task (a malformed task.toml, a missing file) is
    a usage error, with the file and line, before anything runs: exit 4."""
    use_environment(environment)
    show_progress()
    unusable = _unusable(task_dirs)
    if unusable:
        raise usage_error(unusable)
    # A stopped run removes what it made: its threads cannot be interrupted.
    with exit_on_signals(remove_what_was_made):
        if image_map is None:
            image_map = []
        chosen = [flag for flag, on in (("--solution", solution), ("--noop", noop)) if on]
        if agent is not None:
            chosen.append("--agent")
        if ray_address is not None and jobs != 1:
            raise typer.BadParameter(
                "on Ray, the nodes' docker slots say how many run at once", param_hint="--jobs"
            )
        if container is not None:
            _verify_container(
                task_dirs, container, chosen, mode, step, budget, as_json, ray_address, environment
            )
        if step is not None or budget is not None:
            raise typer.BadParameter("--step and --budget go with --container")
        if len(chosen) != 1:
            raise typer.BadParameter("give exactly one of --solution, --noop or --agent CMD")
        spec = (
            AgentSpec.solution()
            if solution
            else AgentSpec.noop()
            if noop
            else AgentSpec.command(agent or "")
        )
        from_file = read_image_map_file(image_map_file) if image_map_file else ()
        mapping = tuple({**dict(from_file), **dict(parse_image_map(image_map))}.items())
        several = len(task_dirs) > 1

        def options_for(task_dir: Path) -> VerifyOptions:
            # Several tasks' artifacts go to a folder each, named after the task's folder.
            collect = artifacts_dir / task_dir.resolve().name if artifacts_dir and several else None
            return VerifyOptions(
                mode=mode, keep=keep, image_map=mapping, artifacts_dir=collect or artifacts_dir
            )

        def one(task_dir: Path) -> Outcome:
            return verify_path(task_dir, spec, options_for(task_dir))

        def shown(_task_dir: Path, outcome: Outcome) -> None:
            if not as_json:
                _print_human(outcome_json(outcome, mode))

        if several and artifacts_dir is not None:
            names = [d.resolve().name for d in task_dirs]
            if len(set(names)) != len(names):
                raise typer.BadParameter(
                    "two task folders share a name; their artifacts would share a folder",
                    param_hint="--artifacts-dir",
                )
        if ray_address is not None:
            from cleanroom.integrations.ray_verify import TaskVerification

            engine = environment.value
            _verify_on_ray(
                ray_address,
                [TaskVerification(d, spec, options_for(d), engine) for d in task_dirs],
                as_json,
            )
        outcomes = side_by_side(task_dirs, one, jobs, shown)
        if as_json:
            payloads = [outcome_json(o, mode) for o in outcomes]
            typer.echo(json.dumps(payloads if several else payloads[0], sort_keys=False))
        raise typer.Exit(most_serious_exit([o.exit_code for o in outcomes]))


def _unusable(task_dirs: list[Path]) -> list[str]:
    """What is wrong with each task folder that cannot be loaded as a task."""
    wrong = []
    for task_dir in task_dirs:
        try:
            load_task(task_dir)
        except TaskError as exc:
            wrong.append(str(exc))
    return wrong


def _verify_container(
    task_dirs: list[Path],
    container: str,
    agent_flags: list[str],
    mode: Mode,
    step: str | None,
    budget: float | None,
    as_json: bool,
    ray_address: str | None,
    environment: ContainerEnvironment,
) -> NoReturn:
    """``--container``: verify a container an agent already acted in, through the
    public API (`integrations.container.verify_container`, or on the Ray node whose
    daemon holds it), and exit with its code."""
    if agent_flags:
        raise typer.BadParameter(f"--container verifies what an agent did: drop {agent_flags[0]}")
    if len(task_dirs) != 1:
        raise typer.BadParameter("--container verifies one task", param_hint="TASK_DIR")
    if ray_address is not None:
        from cleanroom.integrations.ray_verify import ContainerVerification

        request = ContainerVerification(
            task_dirs[0], container, mode, step, budget, environment.value
        )
        _verify_on_ray(ray_address, [request], as_json)
    try:
        outcome = verify_container(task_dirs[0], container, mode=mode, step=step, budget_s=budget)
    except BudgetTooShortError as exc:
        Console(stderr=True).print(f"[red]error:[/] {exc}", highlight=False)
        raise typer.Exit(EXIT_INVALID) from None
    payload = outcome_json(outcome, mode)
    if as_json:
        typer.echo(json.dumps(payload, sort_keys=False))
    else:
        _print_human(payload)
    raise typer.Exit(outcome.exit_code)


def _verify_on_ray(address: str, requests: list[RayRequest], as_json: bool) -> NoReturn:
    """``--ray``: every request as a Ray task on the cluster at ``address``; each printed
    with its node as it ends (with ``--json``, all at the end, in the order given), then
    exit with the most serious code. A cluster that cannot be used, or no Ray, is one
    line on stderr and exit 2."""
    from cleanroom.integrations.ray_verify import RayUnavailable, verify_on_ray

    # Ray's driver prints to stdout while it is joined (sent to stderr): the results go
    # to this process's stdout as it was.
    out = Console(file=sys.stdout)

    def shown(verified: RayVerification) -> None:
        if not as_json:
            _print_human(ray_outcome_json(verified), out)

    try:
        results = verify_on_ray(address, requests, done=shown)
    except (RayUnavailable, ExtraNotInstalledError, BudgetTooShortError) as exc:
        line = escape(str(exc).strip().splitlines()[0])  # the extra's name is no markup
        Console(stderr=True).print(f"[red]error:[/] {line}", highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_INVALID) from None
    if as_json:
        payloads = [ray_outcome_json(v) for v in results]
        typer.echo(json.dumps(payloads if len(payloads) > 1 else payloads[0], sort_keys=False))
    raise typer.Exit(most_serious_exit([v.outcome.exit_code for v in results]))


def ray_outcome_json(verified: RayVerification) -> dict[str, Any]:
    """`outcome_json` with ``node``: the Ray node it ran on (None when it ran on none
    known)."""
    return {**outcome_json(verified.outcome, verified.mode), "node": verified.node}


def most_serious_exit(codes: list[int]) -> int:
    """The exit code of several verifications: any invalid one (2) first, then a failure
    the agent caused (3), then a failure (1), else success (0)."""
    for code in (EXIT_INVALID, EXIT_AGENT_FAULT, EXIT_FAILURE):
        if code in codes:
            return code
    return EXIT_SUCCESS


def parse_image_map(items: list[str]) -> tuple[tuple[str, str], ...]:
    """``FROM=TO`` pairs; a malformed one is a usage error naming it."""
    pairs: dict[str, str] = {}
    for item in items:
        source, sep, target = item.partition("=")
        if not sep or not source.strip() or not target.strip() or " " in item.strip():
            raise typer.BadParameter(
                f"{item!r} is not FROM=TO (two image names)", param_hint="--image-map"
            )
        if source in pairs and pairs[source] != target:
            raise typer.BadParameter(f"{source} is mapped twice", param_hint="--image-map")
        pairs[source.strip()] = target.strip()
    return tuple(pairs.items())


def read_image_map_file(path: Path) -> tuple[tuple[str, str], ...]:
    """The ``[image_map]`` table of a TOML file as pairs; anything else is a usage error
    naming the file and what is wrong."""
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise typer.BadParameter(f"{path}: {exc}", param_hint="--image-map-file") from exc
    table = data.get("image_map")
    if not isinstance(table, dict) or set(data) != {"image_map"}:
        raise typer.BadParameter(
            f"{path}: needs one [image_map] table and nothing else", param_hint="--image-map-file"
        )
    bad = [k for k, v in table.items() if not isinstance(v, str) or not v.strip() or " " in v]
    if bad:
        raise typer.BadParameter(
            f"{path}: {bad[0]!r} does not map to one image name", param_hint="--image-map-file"
        )
    return tuple((k.strip(), v.strip()) for k, v in table.items())


def outcome_json(outcome: Outcome, mode: Mode) -> dict[str, Any]:
    """``{"outcome", "score", "reason", "caused_by", "mode", "detail", "reward_metrics",
    "details"}``."""
    data = outcome.to_json()
    return {
        "outcome": data["outcome"],
        "score": data["score"],
        "reason": data["reason"],
        "caused_by": data["caused_by"],
        "mode": mode.value,
        "detail": data["detail"],
        "reward_metrics": data["reward_metrics"],
        "details": data["details"],
    }


def _print_human(payload: dict[str, Any], console: Console | None = None) -> None:
    console = console or Console()
    details = payload["details"]
    head = f"[{status_style(payload['outcome'])}]{payload['outcome']}[/]"
    score = "" if payload["score"] is None else f" score {payload['score']:g}"
    reason = (
        f" ({payload['reason']}, caused by the {payload['caused_by']})" if payload["reason"] else ""
    )
    console.print(f"{head}{score}{reason}  mode {payload['mode']}  task {details.get('task')}")
    if payload["detail"]:
        console.print(f"  {payload['detail']}", markup=False)
    if payload.get("node"):
        console.print(f"  on Ray node {payload['node']}", markup=False)
    for key in ("reward_source", "reward_bytes", "test_exit_code", "timings"):
        if key in details:
            console.print(f"  {key}: {details[key]}", markup=False)
    for item in details.get("artifacts", []):
        dropped = f", dropped {', '.join(item['dropped'][:5])}" if item.get("dropped") else ""
        console.print(f"  artifact {item['source']}: {item['status']}{dropped}", markup=False)
    if "artifacts_dir" in details:
        console.print(f"  artifacts collected in {details['artifacts_dir']}", markup=False)
    for step in details.get("steps", []):
        why = f" ({step['reason']}: {step['detail']})" if step["reason"] else ""
        score = "" if step["score"] is None else f" score {step['score']:g}"
        console.print(f"  step {step['step']}: {step['outcome']}{score}{why}", markup=False)
    for line in details.get("tamper", [])[:20]:
        console.print(f"  tamper: {line}", markup=False)
    unseen = details.get("unseen_by_verifier") or {}
    if unseen.get("count"):
        first = ", ".join(unseen["first"][:5])
        console.print(
            f"  {unseen['count']} change(s) outside the state the verifier saw: {first}",
            markup=False,
        )
    for warning in details.get("task_warnings", []):
        console.print(f"  warning: {warning}", markup=False)
    if "build_log" in details:
        console.print(details["build_log"], markup=False)
