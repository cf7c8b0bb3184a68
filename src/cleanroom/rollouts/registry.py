"""The smoke tasks by name: the one table the harness and the ``rollout`` command share.

Each entry builds its task; the form task needs a verify-server client, which the caller
supplies on demand (the harness has the run's server; the ``rollout`` command starts one
only when the task asks for it). The task modules are imported when their task is built.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from cleanroom.rollouts.base import SmokeTask

if TYPE_CHECKING:
    from cleanroom.verify_server.client import VerifyClient

#: Supplies the verify-server client for a task that needs one.
VerifySupplier = Callable[[], "VerifyClient"]


def _rename(verify: VerifySupplier) -> SmokeTask:
    from cleanroom.rollouts.rename import RenameTask

    return RenameTask()


def _writer(verify: VerifySupplier) -> SmokeTask:
    from cleanroom.rollouts.writer import WriterTask

    return WriterTask()


def _form(verify: VerifySupplier) -> SmokeTask:
    from cleanroom.rollouts.form import FormTask

    return FormTask(verify())


SMOKE_TASKS: dict[str, Callable[[VerifySupplier], SmokeTask]] = {
    "rename": _rename,
    "writer": _writer,
    "form": _form,
}
TASKS = tuple(SMOKE_TASKS)


def make_smoke_task(name: str, verify: VerifySupplier) -> SmokeTask:
    """The task object for a smoke task name; ``verify`` is called only by a task that
    uses the verify server."""
    try:
        build = SMOKE_TASKS[name]
    except KeyError:
        raise ValueError(f"unknown smoke task {name!r}; choose one of {', '.join(TASKS)}") from None
    return build(verify)
