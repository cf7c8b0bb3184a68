"""OSWorld's ``DesktopEnv`` interface over one environment of a cleanroom pool.

An OSWorld agent's loop runs unchanged against it: ``obs = env.reset(task_config=task)``,
then ``obs, reward, done, info = env.step(action)`` until ``done``, then
``env.evaluate()``. Underneath:

- `reset` is a cleanroom reset of the environment (a new generation: an action of the
  rollout before it is refused as stale), then the task's ``config`` steps run in the
  environment, as its user, in its sandbox, on its display (the ``env:`` guest);
- `step` takes an action of the environment's action space (`ACTION_SPACES`): a
  ``computer_13`` action (parsed strictly and translated into policy
  actions, `environments.osworld_env.actions`), which goes through the pool (it checks
  the environment and its generation), and whose pointer actions the policy API lacks
  (a click where the pointer is, a held button, a drag, the wheel) run as the pyautogui
  calls OSWorld's controller sends; or ``pyautogui`` code, rewritten as OSWorld's
  ``step`` rewrites it (`rewrite_less_than`), which runs as OSWorld's server runs it,
  in the environment (as its user, in its sandbox, on its display, with the pyautogui
  `make setup` puts on the system Python's path), as is the code of OSWorld's Claude
  and AutoGLM agents' spaces; or OSWorld's ``WAIT``, ``FAIL`` and ``DONE``. Code of
  either kind aimed at a generation the environment has left is refused as stale;
- `evaluate` runs cleanroom's OSWorld checker (`verifiers.osworld.evaluator.check_task`)
  in the environment: the agent's 0 is 0.0, a success its score; an infrastructure fault
  (a getter that could not run, a checker that raised) is `invalid`, raised as
  `InvalidEvaluation` with the outcome, never returned as a 0. Either way the outcome
  is kept: typed in ``last_outcome`` (what a harness decides on), and in its wire form in
  ``last_eval_details`` (a dict for people and run scripts: status, score, reason,
  detail, the checker's details).

What OSWorld's runner and agents read besides: ``env.controller`` (OSWorld's controller
calls over this environment, `osworld_controller.EnvironmentController`), ``env._get_obs()``
and ``env.vm_ip`` (None here; `osworld_provider.DesktopEnv` serves an equivalent of
OSWorld's in-VM server and sets it).

Observations are OSWorld's: ``screenshot`` (PNG bytes), ``accessibility_tree`` (the
environment's own AT-SPI tree in OSWorld's XML, with ``require_a11y_tree``, on by
default as in OSWorld; None when it could not be read), ``terminal`` (None, as OSWorld
gives for anything but gnome-terminal) and ``instruction``.
"""

from __future__ import annotations

import time
from typing import Any

from cleanroom.core.errors import CleanroomError
from cleanroom.core.outcomes import Outcome, Status
from cleanroom.environments.errors import (
    DisplayHeld,
    EnvironmentBroken,
    PoolError,
    StaleGeneration,
)
from cleanroom.environments.interface import Needs, require, status_of
from cleanroom.environments.osworld_env.actions import (
    ACTION_SPACES,
    Control,
    PointerCode,
    PyautoguiCode,
    Translated,
    step_action,
)
from cleanroom.environments.policy.handle import LocalHandle
from cleanroom.exec_result import ExecResult
from cleanroom.guests.base import GuestTimeout
from cleanroom.guests.desktop import DesktopGuest
from cleanroom.rollouts.osworld_controller import EnvironmentController
from cleanroom.verifiers.osworld.evaluator import TaskRun, check_task
from cleanroom.verifiers.osworld.mirror import Mirror
from cleanroom.verifiers.osworld.settings import CheckSettings
from cleanroom.verifiers.osworld.task import Task, parse_task

# How long one action's code may run: OSWorld's server limit.
CODE_TIMEOUT_S = 120.0


class InvalidEvaluation(CleanroomError):
    """The evaluation could not be made for a reason that is not the agent's: excluded,
    never a 0. ``outcome`` holds the reason."""

    def __init__(self, outcome: Outcome) -> None:
        super().__init__(f"invalid ({outcome.reason}): {outcome.detail}")
        self.outcome = outcome


class NoTask(CleanroomError):
    """`evaluate` before any `reset` with a task."""


class OSWorldDesktopEnv:
    """``DesktopEnv``'s constructor arguments that matter to an agent, and its methods,
    over environment ``env`` of ``handle``'s pool. ``mirror`` is where the task's files
    come from (`CheckSettings.mirror`) when no ``settings`` are given."""

    def __init__(
        self,
        handle: LocalHandle,
        *,
        action_space: str = "computer_13",
        require_a11y_tree: bool = True,
        require_terminal: bool = False,
        settings: CheckSettings | None = None,
        mirror: Mirror | None = None,
    ) -> None:
        if action_space not in ACTION_SPACES:
            raise ValueError(f"action_space={action_space!r}: choose {', '.join(ACTION_SPACES)}")
        pool = handle.pool
        # OSWorld's checkers run commands in the environment, and its agents read the tree.
        require(
            pool.provider,
            pool.capabilities,
            Needs(real_desktops=True, commands=True, accessibility=require_a11y_tree),
        )
        self.handle = handle
        self.action_space = action_space
        self.require_a11y_tree = require_a11y_tree
        self.require_terminal = require_terminal
        if settings is None:  # the environment's own screen, as OSWorld's VM reports its own
            screen = handle.pool.screen_size(handle.env)
            settings = CheckSettings(
                screen_width=screen.width, screen_height=screen.height, mirror=mirror
            )
        elif mirror is not None:
            raise ValueError("give the mirror in settings or as mirror=, not both")
        self.settings = settings
        self.screen_size = (self.settings.screen_width, self.settings.screen_height)
        self.task: Task | None = None
        self.instruction: str | None = None
        self.action_history: list[Any] = []
        self.setup_outcome: Outcome | None = None
        self.code_results: list[Any] = []  # what each pyautogui action's code gave
        self.controller = EnvironmentController(handle)
        self.vm_ip: str | None = None
        self.last_outcome: Outcome | None = None
        self.last_eval_details: dict[str, Any] | None = None

    # -- OSWorld's methods ----------------------------------------------------------------

    def reset(
        self,
        task_config: dict[str, Any] | None = None,
        seed: int | None = None,
        options: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """A new generation of the environment, then the task's setup; the observation.

        A setup that could not run is kept in ``setup_outcome`` (invalid) and makes
        `evaluate` raise `InvalidEvaluation`: a rollout on a task that was never set up
        is the infrastructure's, not the agent's.
        """
        self.handle.reset()
        return self.begin(task_config)

    def begin(self, task_config: dict[str, Any] | None) -> dict[str, Any]:
        """`reset` without the reset: the task's setup on the environment as it is (a
        harness that has just reset it for a rollout); the observation."""
        self.action_history.clear()
        self.code_results.clear()
        self.setup_outcome = None
        if task_config is not None:
            self.task = parse_task(task_config, f"<task {task_config.get('id', '?')}>")
            self.instruction = self.task.instruction
            with TaskRun(self.task, self.guest(), self.settings) as run:
                self.setup_outcome = run.refusal() or run.setup()
        return self._observation()

    def step(self, action: Any, pause: float = 2.0) -> tuple[dict[str, Any], float, bool, dict]:
        """Take one action; ``(observation, 0, done, info)`` as OSWorld returns them."""
        self.action_history.append(action)
        result = step_action(self.action_space, action, screen=self.screen_size)
        done, info = False, {}
        if isinstance(result, PyautoguiCode):
            self._run_code(result)
            time.sleep(pause)
        elif isinstance(result, PointerCode):
            for code in result.codes:
                self._run_code(code)
            time.sleep(pause)
        elif isinstance(result, Control):
            done, info = result.done, result.info()
            if result.kind == "WAIT":
                time.sleep(pause)
        elif isinstance(result, Translated):
            for one in result.actions:
                self.handle.act(one)
            time.sleep(pause)
        return self._observation(), 0.0, done, info

    def evaluate(self) -> float:
        """The task's score in the environment as it is now; `InvalidEvaluation` when the
        infrastructure kept it from being made."""
        if self.task is None:
            raise NoTask("reset with a task config before evaluating")
        self._keep(None)
        if self.setup_outcome is not None:
            self._keep(self.setup_outcome)
            raise InvalidEvaluation(self.setup_outcome)
        last = self.action_history[-1] if self.action_history else None
        checked = check_task(self.task, self.guest(), self.settings, last_action=last)
        self._keep(checked)
        if checked.status is Status.INVALID:
            raise InvalidEvaluation(checked)
        return float(checked.score or 0.0)

    def close(self) -> None:
        """Nothing to stop: the pool owns the environment."""

    def _get_obs(self) -> dict[str, Any]:
        """The observation now, as OSWorld's ``_get_obs`` gives it (its runners call it
        after `reset`)."""
        return self._observation()

    # -- beneath ----------------------------------------------------------------------

    def _keep(self, outcome: Outcome | None) -> None:
        self.last_outcome = outcome
        self.last_eval_details = outcome.to_json() if outcome is not None else None

    def _run_code(self, code: PyautoguiCode) -> None:
        """Run an agent's pyautogui code as OSWorld's server does, in the environment: as
        its user, in its sandbox, on its display, with OSWorld's prefix. What the code
        prints, and whether it failed, does not reach the agent (nor does it in OSWorld);
        it is kept in ``code_results``, as is code that ran past ``CODE_TIMEOUT_S`` and
        was killed. Code aimed at a generation the environment has left (a reset happened
        under it) is refused like any stale action."""
        env = self.handle.env
        current = self.handle.pool.generation(env)
        if current != self.handle.generation:
            raise StaleGeneration(env, self.handle.generation, current)
        started = time.monotonic()
        try:
            result = self.guest().exec(
                ["python3", "-c", code.program()], shell=False, timeout=CODE_TIMEOUT_S
            )
        except GuestTimeout:
            # The agent's own code ran past the limit (OSWorld's server answers an error
            # and the episode goes on): killed, kept as timed out, never the harness's.
            elapsed = time.monotonic() - started
            result = ExecResult(exit_code=None, timed_out=True, seconds=elapsed)
        self.code_results.append(result)

    def guest(self) -> DesktopGuest:
        """The environment as the checker's guest: its user, home, sandbox and display."""
        return DesktopGuest(self.handle.env, status_of(self.handle.pool, self.handle.env))

    def _observation(self) -> dict[str, Any]:
        return {
            "screenshot": self.handle.screenshot(),
            "accessibility_tree": self._accessibility_tree() if self.require_a11y_tree else None,
            "terminal": None,
            "instruction": self.instruction,
        }

    def _accessibility_tree(self) -> str | None:
        """The environment's AT-SPI tree in OSWorld's XML, or None when it could not be
        read, as OSWorld's controller gives None when its server fails. The tree is the
        agent's own programs' (a huge or hung one is its doing), so a failure to read it
        never ends the rollout; a stale generation, a broken environment or a display its
        own client held (a server grab) still does."""
        try:
            return self.handle.accessibility_tree()
        except (StaleGeneration, EnvironmentBroken, DisplayHeld):
            raise
        except PoolError:
            return None
