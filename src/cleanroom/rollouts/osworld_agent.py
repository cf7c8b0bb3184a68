"""An OSWorld task driven by an agent, as a rollout of the harness loop.

The harness runs it like its own smoke tasks: it mints the rollout's token, resets the
environment, records the rollout, and its windows run the isolation trials, the canary
and the token sweep around it, so the rollout's outcome is made invalid when they find a
leak in its window. The task's policy is the agent's own loop through OSWorld's
``DesktopEnv`` interface (`osworld_desktop_env`): the task's setup, then one action per
observation until the agent says ``DONE`` or ``FAIL`` or runs out of steps. Its
verification is cleanroom's OSWorld checker: the agent's score, or ``invalid`` when the
infrastructure kept the check from being made.

Nothing the agent does turns its score into an exclusion: an action that is malformed,
and an exception of the agent's own code, end its episode there, and the desktop as it
is then is scored (the reason is in the outcome's details). Only what the
infrastructure did (a reset under the rollout, a broken pool, a check that could not
run) makes the rollout invalid.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cleanroom.core.outcomes import Outcome
from cleanroom.environments.errors import BadAction
from cleanroom.environments.policy.handle import LocalHandle
from cleanroom.rollouts.base import RolloutContext, RolloutSetupError, SmokeTask
from cleanroom.rollouts.osworld_desktop_env import InvalidEvaluation, OSWorldDesktopEnv
from cleanroom.verifiers.osworld.settings import CheckSettings

# The agent: the next action for an observation (and the environment, for agents that
# read more than OSWorld's observation gives).
Agent = Callable[[dict[str, Any], OSWorldDesktopEnv], Any]
ENV_KEY = "osworld_env"
ENDED_KEY = "osworld_episode_ended"


class OSWorldAgentTask(SmokeTask):
    """``task_config`` (an OSWorld task) driven by ``agent``, at most ``max_steps``."""

    def __init__(
        self,
        name: str,
        task_config: dict[str, Any],
        agent: Agent,
        *,
        action_space: str = "pyautogui",
        settings: CheckSettings | None = None,
        max_steps: int = 15,
        pause_s: float = 0.5,
        require_a11y_tree: bool = True,
    ) -> None:
        self.require_a11y_tree = require_a11y_tree
        self.name = name
        self.task_config = task_config
        self.agent = agent
        self.action_space = action_space
        self.settings = settings
        self.max_steps = max_steps
        self.pause_s = pause_s

    def policy(self, ctx: RolloutContext) -> None:
        if not isinstance(ctx.handle, LocalHandle):
            raise RolloutSetupError("an OSWorld agent's rollout needs the pool in this process")
        env = OSWorldDesktopEnv(
            ctx.handle,
            action_space=self.action_space,
            settings=self.settings,
            require_a11y_tree=self.require_a11y_tree,
        )
        ctx.state[ENV_KEY] = env
        obs = env.begin(self.task_config)
        for _ in range(self.max_steps):
            try:
                action = self.agent(obs, env)
            except Exception as exc:  # the agent's own code: its episode ends there
                ctx.state[ENDED_KEY] = f"the agent raised {type(exc).__name__}: {exc}"[:500]
                return
            try:
                obs, _, done, _ = env.step(action, pause=self.pause_s)
            except BadAction as exc:  # malformed (OSWorld's schema refuses it)
                ctx.state[ENDED_KEY] = f"the agent's action ended its episode: {exc}"[:500]
                return
            if done:
                return

    def verify(self, ctx: RolloutContext) -> Outcome:
        env: OSWorldDesktopEnv = ctx.state[ENV_KEY]
        try:
            score = env.evaluate()
        except InvalidEvaluation as exc:
            return exc.outcome
        details = {"ended": ctx.state[ENDED_KEY]} if ENDED_KEY in ctx.state else {}
        return Outcome.success(score, **details) if score > 0 else Outcome.failure(score, **details)
