"""Container verifications side by side: the one bounded pool every caller that runs many
of them uses (`cleanroom verify` over several tasks, the red-team matrix, the audit's
local pool).

Each verification mostly waits on the Docker daemon (containers starting, archives
moving, test scripts running), so threads of one process are enough; ``workers`` bounds
how many run at once. Images are built before any verification starts
(`build_images`), so that two verifications of one task never race to build the same
image.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import TypeVar

from cleanroom.docker_layer import ImageBuildFailed
from cleanroom.verifiers.container.runtime import RuntimeUnavailable, VerificationRuntime
from cleanroom.verifiers.container.task import Task

Item = TypeVar("Item")
Result = TypeVar("Result")


def side_by_side(
    items: Sequence[Item],
    run: Callable[[Item], Result],
    workers: int,
    on_result: Callable[[Item, Result], None] | None = None,
) -> list[Result]:
    """``run`` on every item, ``workers`` at a time; the results in the items' order.

    ``on_result`` is called in the caller's thread as each item ends, in the order they
    end. ``run`` is expected not to raise (a verification turns every failure into an
    outcome); if one does, no further item starts, the running ones finish, and the
    first exception is raised.
    """
    if workers < 1:
        raise ValueError(f"workers must be at least 1, not {workers}")
    results: dict[int, Result] = {}
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="verify") as pool:
        pending: dict[Future[Result], int] = {
            pool.submit(run, item): i for i, item in enumerate(items)
        }
        while pending:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                i = pending.pop(future)
                error = future.exception()
                if error is not None:
                    for other in pending:
                        other.cancel()
                    raise error
                results[i] = future.result()
                if on_result is not None:
                    on_result(items[i], results[i])
    return [results[i] for i in range(len(items))]


def build_images(
    tasks: Iterable[Task],
    runtime: VerificationRuntime,
    image_map: Mapping[str, str] | None = None,
) -> None:
    """Build (or find) every task's image once, before verifications run side by side.

    A build that fails is not raised here: each verification of that task meets it again
    and reports it as its own outcome (`environment_error`, with the build log).
    """
    for task in tasks:
        with contextlib.suppress(ImageBuildFailed, RuntimeUnavailable):
            runtime.images.for_task(task, image_map or {})
