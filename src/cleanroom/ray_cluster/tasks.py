"""Work as Ray tasks, one task per item, each on a node that declares a resource.

Each task asks for one unit of the resource, so it lands only on a node started with it
(``ray start --resources '{"docker": 2}'``: two at a time there), or on the very node an
item names. Ray never retries a task (``max_retries=0``): work whose worker or node died
is reported `Lost`, never run again behind the caller's back. What a task returns must
be plain data; what it raises is a `Failed` (a bug of the code it ran, not a lost node).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from cleanroom.ray_cluster.session import first_line

Item = TypeVar("Item")


@dataclass(frozen=True)
class Finished:
    """The task returned ``value``."""

    value: Any


@dataclass(frozen=True)
class Failed:
    """The task raised: the code it ran has a bug; ``why`` holds the end of its traceback."""

    why: str


@dataclass(frozen=True)
class Lost:
    """The worker or the node running the task went away."""

    why: str


@dataclass(frozen=True)
class TaskEnd(Generic[Item]):
    item: Item
    end: Finished | Failed | Lost


def run_each(
    ray: Any,
    fn: Callable[..., Any],
    items: Sequence[Item],
    args_of: Callable[[Item], tuple[Any, ...]],
    *,
    resource: str,
    node_of: Callable[[Item], str | None] = lambda item: None,
    started: Callable[[Item], None] = lambda item: None,
) -> Iterator[TaskEnd[Item]]:
    """Run ``fn(*args_of(item))`` as a Ray task for every item; yield each as it ends.

    ``node_of`` may pin an item to a node id (the node holding its container); the task
    still takes one unit of ``resource`` there.
    """
    from ray.exceptions import RayError, RayTaskError
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    options = {
        "num_cpus": 0,
        "resources": {resource: 1},
        "max_retries": 0,
        "retry_exceptions": False,
    }
    remote = ray.remote(**options)(fn)
    pending: dict[Any, Item] = {}
    for item in items:
        node = node_of(item)
        task = remote
        if node is not None:
            task = remote.options(
                scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False)
            )
        pending[task.remote(*args_of(item))] = item
        started(item)
    while pending:
        ready, _ = ray.wait(list(pending), num_returns=1)
        for ref in ready:
            item = pending.pop(ref)
            end: Finished | Failed | Lost
            try:
                end = Finished(ray.get(ref))
            except RayTaskError as exc:  # the task's own code raised
                end = Failed(str(exc)[-3000:])
            except RayError as exc:  # its worker or its node is gone
                end = Lost(first_line(exc))
            yield TaskEnd(item, end)
