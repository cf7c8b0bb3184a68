"""The OSWorld rename task, done by typing a shell command into the terminal.

Setup and checking are the task's own (``config`` steps and evaluator), run through the
``env:`` guest as the environment's user; the policy types one command line whose
trailing comment carries the token.
"""

from __future__ import annotations

import time
from pathlib import Path

from cleanroom.core.outcomes import Outcome, Reason
from cleanroom.guests.base import GuestError
from cleanroom.guests.desktop import DesktopGuest, open_desktop_guest
from cleanroom.rollouts.base import RolloutContext, RolloutSetupError, SmokeTask
from cleanroom.verifiers.osworld.evaluator import TaskRun
from cleanroom.verifiers.osworld.task import load_task

TASK_FILE = (
    Path(__file__).resolve().parents[3]
    / "tests/data/osworld/tasks/os/e0df059f-28a6-4169-924f-b9623e7184cc.json"
)


class RenameTask(SmokeTask):
    """Rename ``~/Desktop/todo_list_Jan_1`` to ``todo_list_Jan_2``."""

    name = "rename"

    def __init__(self, task_file: Path = TASK_FILE) -> None:
        self.task = load_task(task_file)

    def setup(self, ctx: RolloutContext) -> None:
        try:
            guest: DesktopGuest = (
                DesktopGuest(ctx.env, ctx.env_details(ctx.env))
                if ctx.env_details is not None
                else open_desktop_guest(ctx.env, ctx.run_dir)
            )
        except GuestError as exc:
            raise RolloutSetupError(str(exc)) from exc
        run = TaskRun(self.task, guest)
        failure = run.setup()
        if failure is not None:
            raise RolloutSetupError(f"task setup failed: {failure.detail}")
        ctx.state["guest"] = guest
        ctx.state["run"] = run

    def policy(self, ctx: RolloutContext) -> None:
        h = ctx.handle
        h.focus(program="terminal")
        h.type_text(f"mv ~/Desktop/todo_list_Jan_1 ~/Desktop/todo_list_Jan_2 # {ctx.token}\n")
        time.sleep(0.5)  # the shell runs the command after Return

    def verify(self, ctx: RolloutContext) -> Outcome:
        run: TaskRun | None = ctx.state.get("run")
        if run is None:
            return Outcome.invalid(Reason.ENVIRONMENT_ERROR, "the task was not set up")
        return run.check()

    def teardown(self, ctx: RolloutContext) -> None:
        run = ctx.state.pop("run", None)
        if run is not None:
            run.close()
        guest = ctx.state.pop("guest", None)
        if guest is not None:
            guest.close()
