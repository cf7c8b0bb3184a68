"""Verifications as Ray tasks, each on a node of the cluster that declares Docker.

`verify_on_ray` runs each request as one Ray task that takes one unit of the ``docker``
resource (``ray start --resources '{"docker": 2}'``: two at a time on that node) and
works with that node's own daemon:

- a `TaskVerification` is what ``cleanroom verify TASK --solution|--noop|--agent`` does
  on one machine (build the task's image, run the agent, verify); Ray spreads these over
  the Docker nodes;
- a `ContainerVerification` verifies a container another harness started and its agent
  already acted in (`verify_container`), on the node whose daemon holds it. A probe on
  every Docker node asks its daemon whether it holds the container, and the daemon's ID
  (`choose_nodes`): several Ray nodes of one machine share a daemon, and take its
  containers in turn; a container on no daemon, or on two different ones, is ``invalid``.

Each comes back as a `RayVerification`: the outcome and the node it ran on. Nothing is
retried behind the caller's back. A verification whose worker or node was lost is
``invalid`` (``interrupted``), never a 0; one whose code raised is ``invalid``
(``harness_error``). The task folders must be readable at the same path on every node
(a shared filesystem, or the same checkout everywhere; the calling machine reads them
too, to refuse a budget too short before anything runs), and the nodes' Python must
have cleanroom.
"""

from __future__ import annotations

import contextlib
import os
import traceback
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import Any, Unpack

from cleanroom.core.outcomes import Outcome, Reason
from cleanroom.integrations.container import (
    ContainerOptions,
    ContainerVerification,
    check_budget,
    check_engine,
    runtime_of,
    verify_requested,
)
from cleanroom.ray_cluster import tasks
from cleanroom.ray_cluster.session import (
    DOCKER_RESOURCE,
    RayNode,
    RayUnavailable,
    first_line,
    import_ray,
    joined,
    nodes_declaring,
    require_nodes,
    this_node_name,
)
from cleanroom.verifiers.container.modes import Mode
from cleanroom.verifiers.container.runtime import RuntimeUnavailable
from cleanroom.verifiers.container.verify import AgentSpec, VerifyOptions, verify_path

__all__ = [
    "ContainerVerification",
    "DaemonSeen",
    "RayRequest",
    "RayUnavailable",
    "RayVerification",
    "TaskVerification",
    "choose_nodes",
    "verification_of",
    "verify_container_on_ray",
    "verify_on_ray",
]

FEATURE = "verify --ray"
# Every container a Ray verification of a task folder starts carries this label with the
# verification's id, so that what a lost one left on a daemon can be found and removed.
RAY_VERIFICATION_LABEL = "cleanroom.ray.verification"
TRACE_CHARS = 3000


@dataclass(frozen=True)
class TaskVerification:
    """A whole verification of the task in ``task_dir``, as ``cleanroom verify TASK``
    does it: its image built, ``agent`` run, then verified as ``options`` say, on the
    node's daemon of ``engine``. ``options.artifacts_dir``, when set, is written on the
    node that ran it."""

    task_dir: Path
    agent: AgentSpec
    options: VerifyOptions = field(default_factory=VerifyOptions)
    engine: str = "docker"

    def __post_init__(self) -> None:
        object.__setattr__(self, "task_dir", Path(self.task_dir))
        check_engine(self.engine)


RayRequest = TaskVerification | ContainerVerification


@dataclass(frozen=True)
class RayVerification:
    """One request's outcome and the node it ran on (``host/node-id start``); ``node``
    is None when it ran on no node known: no daemon held its container, or it was lost
    before its node answered."""

    request: RayRequest
    outcome: Outcome
    node: str | None

    @property
    def mode(self) -> Mode:
        """The mode the request was verified in."""
        if isinstance(self.request, ContainerVerification):
            return self.request.mode
        return self.request.options.mode


@dataclass(frozen=True)
class DaemonSeen:
    """What one Docker node's daemon of ``engine`` answered the probe: its ID and the
    containers asked about that it holds, or why it did not answer (``error``)."""

    node_id: str
    node: str  # the node's name in records
    engine: str
    daemon_id: str = ""
    holds: frozenset[str] = frozenset()
    error: str = ""


def choose_nodes(
    wanted: Sequence[tuple[str, str]], seen: Sequence[DaemonSeen]
) -> list[str | Outcome]:
    """For each ``(engine, container)`` wanted, the Ray node id to verify it on, or the
    invalid outcome saying why there is none.

    The container must be held by exactly one daemon. Several nodes that share that
    daemon (Ray nodes of one machine) take its containers in turn; a container held by
    no daemon, or by two different ones (two machines with a container of that name),
    is ``invalid``, naming the nodes asked.
    """
    turns: dict[str, int] = {}
    chosen: list[str | Outcome] = []
    for engine, container in wanted:
        asked = [s for s in seen if s.engine == engine]
        holders = [s for s in asked if container in s.holds]
        daemons = sorted({s.daemon_id for s in holders})
        if not holders:
            chosen.append(_held_by_none(engine, container, asked))
        elif len(daemons) > 1:
            nodes = ", ".join(s.node for s in holders)
            chosen.append(
                Outcome.invalid(
                    Reason.VERIFIER_UNAVAILABLE,
                    f"container {container!r} is on {len(daemons)} different {engine} daemons "
                    f"(nodes {nodes}): name it by its ID",
                    container=container,
                    nodes=[s.node for s in holders],
                )
            )
        else:
            turn = turns.get(daemons[0], 0)
            turns[daemons[0]] = turn + 1
            chosen.append(holders[turn % len(holders)].node_id)
    return chosen


def _held_by_none(engine: str, container: str, asked: Sequence[DaemonSeen]) -> Outcome:
    names = ", ".join(s.node for s in asked) or "none"
    silent = "; ".join(f"{s.node}: {s.error}" for s in asked if s.error)
    return Outcome.invalid(
        Reason.VERIFIER_UNAVAILABLE,
        f"no Docker node's {engine} daemon has container {container!r} (nodes asked: {names})"
        + (f"; did not answer: {silent}" if silent else ""),
        container=container,
        nodes=[s.node for s in asked],
    )


def verification_of(
    request: RayRequest, end: tasks.Finished | tasks.Failed | tasks.Lost, node: str | None
) -> RayVerification:
    """What a Ray task's end means for its request. ``node`` is the node it was pinned
    to, if any: the node a finished task reports wins."""
    if isinstance(end, tasks.Finished):
        try:
            return RayVerification(
                request, Outcome.from_json(end.value["outcome"]), str(end.value["node"])
            )
        except (KeyError, TypeError, ValueError) as exc:
            raised = f"the Ray task returned no outcome: {exc!r}"
            outcome = Outcome.invalid(Reason.HARNESS_ERROR, raised, **_about(request))
            return RayVerification(request, outcome, node)
    if isinstance(end, tasks.Failed):
        last = end.why.strip().splitlines()[-1:] or [""]
        outcome = Outcome.invalid(
            Reason.HARNESS_ERROR,
            f"the verification raised on its Ray node: {last[0]}",
            traceback=end.why,
            **_about(request),
        )
        return RayVerification(request, outcome, node)
    lost = f"the Ray worker or node running this verification was lost: {end.why}"
    outcome = Outcome.invalid(Reason.INTERRUPTED, lost, **_about(request))
    return RayVerification(request, outcome, node)


def _about(request: RayRequest) -> dict[str, str]:
    """The details an outcome made away from the node gives of its request, as the
    node's own would."""
    if isinstance(request, ContainerVerification):
        return {"task": str(request.task_dir), "container": request.container}
    return {"task": str(request.task_dir), "agent": request.agent.label}


def verify_on_ray(
    address: str,
    requests: Sequence[RayRequest],
    *,
    done: Callable[[RayVerification], None] = lambda verification: None,
) -> list[RayVerification]:
    """Run every request as a Ray task on the cluster at ``address`` (``host:port``, or
    ``auto``: the one this machine is in), each on a node that declares ``docker``;
    their results in the order of ``requests``. ``done`` is called with each as it ends.

    A process already connected to Ray (a trainer that is itself a Ray driver) uses its
    own connection, left open, whatever ``address`` says. Raises `RayUnavailable` when
    the cluster cannot be joined or has no node declaring ``docker``,
    `ExtraNotInstalledError` without ``cleanroom[ray]``, and `BudgetTooShortError` when a
    container request's ``budget_s`` leaves no room for its verification, before
    anything runs. Everything else is in the outcomes.
    """
    for request in requests:
        if isinstance(request, ContainerVerification):
            check_budget(request)
    if not requests:
        return []
    with _connected(address) as ray:
        nodes = require_nodes(ray, address, DOCKER_RESOURCE)
        return _run(ray, nodes, list(requests), done)


def verify_container_on_ray(
    address: str,
    task_dir: str | os.PathLike[str],
    container: str,
    **options: Unpack[ContainerOptions],
) -> RayVerification:
    """`verify_container` on the node of the Ray cluster at ``address`` whose daemon holds
    ``container``: its outcome (``.outcome``) and that node (``.node``). Raises as
    `verify_on_ray` does."""
    request = ContainerVerification.of(task_dir, container, **options)
    (verified,) = verify_on_ray(address, [request])
    return verified


# --- on the driver ---------------------------------------------------------------------


@contextlib.contextmanager
def _connected(address: str) -> Iterator[ModuleType]:
    ray = import_ray(FEATURE)
    if ray.is_initialized():
        yield ray
        return
    with joined(address, FEATURE) as ray:
        yield ray


@dataclass(frozen=True)
class _Placed:
    """A request on its way to a node: its place in the caller's list, the node it is
    pinned to (a container's), and the label of what it starts."""

    index: int
    request: RayRequest
    node_id: str | None
    label: str


def _run(
    ray: Any,
    nodes: list[RayNode],
    requests: list[RayRequest],
    done: Callable[[RayVerification], None],
) -> list[RayVerification]:
    results: dict[int, RayVerification] = {}

    def record(index: int, verification: RayVerification) -> None:
        results[index] = verification
        done(verification)

    pinned: dict[int, str] = {}
    asked = [(i, r) for i, r in enumerate(requests) if isinstance(r, ContainerVerification)]
    if asked:
        wanted = [(r.engine, r.container) for _, r in asked]
        choices = choose_nodes(wanted, _probe_nodes(ray, nodes, wanted))
        for (index, request), choice in zip(asked, choices, strict=True):
            if isinstance(choice, Outcome):
                about = {**_about(request), **choice.details}
                record(index, RayVerification(request, replace(choice, details=about), None))
            else:
                pinned[index] = choice
    names = {n.node_id: n.name for n in nodes}
    todo = [
        _Placed(i, r, pinned.get(i), uuid.uuid4().hex)
        for i, r in enumerate(requests)
        if i not in results
    ]
    lost: list[_Placed] = []
    for ended in tasks.run_each(
        ray,
        _verify_on_node,
        todo,
        lambda placed: (placed.request, placed.label),
        resource=DOCKER_RESOURCE,
        node_of=lambda placed: placed.node_id,
    ):
        placed = ended.item
        node = names.get(placed.node_id) if placed.node_id else None
        if isinstance(ended.end, tasks.Lost):
            lost.append(placed)
        record(placed.index, verification_of(placed.request, ended.end, node))
    _remove_what_lost_left(ray, lost)
    return [results[i] for i in range(len(requests))]


def _probe_nodes(ray: Any, nodes: list[RayNode], wanted: list[tuple[str, str]]) -> list[DaemonSeen]:
    """Ask every Docker node's daemons, each through a Ray task pinned to it, which of
    the containers ``wanted`` they hold."""
    engines = sorted({engine for engine, _ in wanted})
    seen: list[DaemonSeen] = []
    for ended in tasks.run_each(
        ray,
        _probe,
        nodes,
        lambda node: (wanted,),
        resource=DOCKER_RESOURCE,
        node_of=lambda node: node.node_id,
    ):
        node, end = ended.item, ended.end
        for engine in engines:
            seen.append(_seen_on(node, engine, end))
    return seen


def _seen_on(
    node: RayNode, engine: str, end: tasks.Finished | tasks.Failed | tasks.Lost
) -> DaemonSeen:
    if isinstance(end, tasks.Lost):
        return DaemonSeen(node.node_id, node.name, engine, error=f"its probe was lost: {end.why}")
    if isinstance(end, tasks.Failed):
        return DaemonSeen(node.node_id, node.name, engine, error="its probe raised")
    answer = end.value["daemons"].get(engine, {})
    if answer.get("error"):
        return DaemonSeen(node.node_id, node.name, engine, error=str(answer["error"]))
    return DaemonSeen(
        node.node_id,
        node.name,
        engine,
        # A daemon that names itself in no way is taken as this node's own.
        daemon_id=str(answer.get("id") or f"node:{node.node_id}"),
        holds=frozenset(answer.get("holds", ())),
    )


def _remove_what_lost_left(ray: Any, lost: list[_Placed]) -> None:
    """Remove, on every Docker node still alive, the containers the lost verifications
    of task folders started (never a container another harness started, nor what
    ``keep`` keeps). Best effort: a node that fails to is left as it is."""
    labels = [
        (p.request.engine, p.label)
        for p in lost
        if isinstance(p.request, TaskVerification) and not p.request.options.keep
    ]
    if not labels:
        return
    alive = nodes_declaring(ray, DOCKER_RESOURCE)
    for _ in tasks.run_each(
        ray,
        _remove_labelled,
        alive,
        lambda node: (labels,),
        resource=DOCKER_RESOURCE,
        node_of=lambda node: node.node_id,
    ):
        pass


# --- on the nodes (Ray tasks) ----------------------------------------------------------


def _verify_on_node(request: RayRequest, label: str) -> dict[str, Any]:
    """The Ray task of one request, on the node it landed on: its outcome as plain data.
    A bug of cleanroom's own is still an outcome, with its trace."""
    import ray

    try:
        outcome = _verify_here(request, label)
    except Exception as exc:
        trace = "".join(traceback.format_exception(exc))[-TRACE_CHARS:]
        outcome = Outcome.invalid(Reason.HARNESS_ERROR, first_line(exc), traceback=trace)
    return {"outcome": outcome.to_json(), "node": this_node_name(ray)}


def _verify_here(request: RayRequest, label: str) -> Outcome:
    if isinstance(request, ContainerVerification):
        return verify_requested(request)
    connect = runtime_of(request.engine, {RAY_VERIFICATION_LABEL: label})
    return verify_path(request.task_dir, request.agent, request.options, connect)


def _probe(wanted: list[tuple[str, str]]) -> dict[str, Any]:
    """The Ray task pinned to each Docker node for the container requests: for each
    engine asked about, this node's daemon's ID and which of the containers it holds,
    or why it did not answer."""
    daemons: dict[str, dict[str, Any]] = {}
    for engine in sorted({e for e, _ in wanted}):
        names = sorted({c for e, c in wanted if e == engine})
        try:
            runtime = runtime_of(engine)()
        except RuntimeUnavailable as exc:
            daemons[engine] = {"error": first_line(exc)}
            continue
        try:
            daemon_id = runtime.docker.daemon_id()
            holds = [c for c in names if runtime.docker.has_container(c)]
            daemons[engine] = {"id": daemon_id, "holds": holds}
        except RuntimeUnavailable as exc:
            daemons[engine] = {"error": first_line(exc)}
        finally:
            runtime.docker.close()
    return {"daemons": daemons}


def _remove_labelled(labels: list[tuple[str, str]]) -> int:
    """The Ray task pinned to each Docker node after a loss: remove the containers
    labelled with each lost verification's label from this node's daemons."""
    removed = 0
    for engine, label in labels:
        with contextlib.suppress(RuntimeUnavailable):
            runtime = runtime_of(engine)()
            try:
                removed += runtime.remove_labelled({RAY_VERIFICATION_LABEL: label}, images=False)
            finally:
                runtime.docker.close()
    return removed
