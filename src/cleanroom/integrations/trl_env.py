"""TRL's Harbor environments with sealed verification (needs ``cleanroom[trl]``).

    from cleanroom.integrations.trl_env import SealedHarborBashEnv, sealed_reward

    trainer = GRPOTrainer(
        ...,
        train_dataset=HarborSpec("tasks/").train_dataset,
        environment_factory=SealedHarborBashEnv,
        reward_funcs=[sealed_reward],
    )

TRL's ``HarborEnv`` runs Harbor's own verifier in the agent's live sandbox, so a reward
file the agent planted, kept in place by a process it left running, scores 1. These
subclasses keep TRL's harness (the sandbox, the tools, the prompt) and replace only the
verification: `verify_environment_async` freezes the agent's sandbox and runs fresh tests
on a copy of its state in a pristine one. A valid outcome is the reward, the agent's own
0 for tampering included; an invalid one (the infrastructure failed) is None, which TRL
turns into NaN and leaves out of the group's mean and advantages: excluded, never a 0.

Every public method of an environment class becomes a tool the model can call (TRL lists
them on the class), so everything here beyond TRL's own ``reset``, ``get_reward`` and
the harness's tools is underscore-prefixed, and the rest of the API is module functions.
"""

from __future__ import annotations

import atexit
import inspect
import logging
import shutil
import weakref
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any, TypeVar

from cleanroom.core.errors import CleanroomError, ExtraNotInstalledError
from cleanroom.core.outcomes import Outcome
from cleanroom.core.tally import DEFAULT_PREFIX, RewardTally
from cleanroom.integrations.rewards import reward_info, reward_or_none
from cleanroom.verifiers.container.modes import Mode

try:
    from trl.experimental.harbor import HarborBashEnv, HarborEnv

    from cleanroom.integrations.environment import PATHS, verify_environment_async
except ImportError as exc:  # Harbor's missing extra is reported as this one's
    raise ExtraNotInstalledError(
        "TRL's Harbor environments with sealed verification", "trl", exc.name or "trl"
    ) from exc

# The per-sample columns `sealed_reward` adds to TRL's completions table, from
# `reward_info`: what each rollout's outcome was, why, and who caused it.
LOGGED_COLUMNS = ("outcome", "reason", "caused_by", "detail")

__all__ = [
    "LOGGED_COLUMNS",
    "SealedHarborBashEnv",
    "SealedHarborEnv",
    "close_environments",
    "outcome_of",
    "sealed_reward",
]

_log = logging.getLogger(__name__)
T = TypeVar("T")

# Every sealed environment still alive, so that the last sandbox of each is stopped when
# the process ends: TRL reuses its environments across batches and never closes them.
_OPEN: weakref.WeakSet[SealedHarborEnv] = weakref.WeakSet()


class SealedHarborEnv(HarborEnv):
    """TRL's ``HarborEnv`` whose reward is cleanroom's verification of the rollout.

    ``mode`` is ``sealed`` (``cleared`` or ``shared`` only to compare); ``budget_s`` the
    time the verification may take (None: the task's own limits, since TRL sets none);
    ``path`` how the sandbox is reached (`environment.PATHS`). Subclass it, as TRL's
    harnesses subclass ``HarborEnv``, for other tools; `SealedHarborBashEnv` is TRL's
    ``bash`` harness.
    """

    def __init__(
        self,
        environment_type: str = "docker",
        *,
        mode: Mode | str = Mode.SEALED,
        budget_s: float | None = None,
        path: str = "auto",
    ) -> None:
        # Checked here, not at the first verification: a wrong setting must stop the run
        # before any rollout is spent on it.
        chosen = Mode(mode)
        if path not in PATHS:
            raise ValueError(f"path={path!r}: choose one of {', '.join(PATHS)}")
        if budget_s is not None and not (isinstance(budget_s, int | float) and budget_s > 0):
            raise ValueError(f"budget_s={budget_s!r}: a number of seconds above 0, or None")
        super().__init__(environment_type=environment_type)
        self._closed = False
        self._mode = chosen
        self._budget_s = budget_s
        self._path = path
        # This rollout's outcome, once verified: kept so that the reward and the logged
        # reason come from one verification, however many readers ask.
        self._outcome: Outcome | None = None
        _OPEN.add(self)

    def get_reward(self) -> float | None:
        """This rollout's reward, None when it must not be scored (invalid).

        TRL's trainers add it as a reward function of its own, named after the class,
        and leave a None out of the group's mean. It must stay public under this name."""
        outcome = self._verified_outcome()
        return None if outcome is None else reward_or_none(outcome)

    async def _verify(self) -> float | None:
        """TRL's verification hook, behind its ``reward`` property: cleanroom's instead
        of Harbor's verifier in the agent's own sandbox."""
        if self._outcome is None:
            self._outcome = await verify_environment_async(
                self._task.paths.task_dir,
                self._env,
                mode=self._mode,
                budget_s=self._budget_s,
                path=self._path,
            )
        return reward_or_none(self._outcome)

    def _verified_outcome(self) -> Outcome | None:
        """This rollout's outcome, verifying it on first use; None before any ``reset``,
        when there is no rollout to verify."""
        if self._env is None:
            return None
        if self._outcome is None:
            self._run(self._verify())
        return self._outcome

    async def _stop(self) -> None:
        """TRL's teardown of the rollout's sandbox (at the next ``reset``, and when the
        environment goes away), which also forgets the outcome and removes the trial
        folder TRL made for the rollout and leaves behind."""
        try:
            await super()._stop()
        finally:
            self._outcome = None
            if self._paths is not None:  # a second stop finds the folder gone: no matter
                shutil.rmtree(Path(self._paths.trial_dir), ignore_errors=True)

    def _close(self) -> None:
        """Stop the sandbox, remove the trial folder and end the environment's event
        loop; the environment cannot be used after."""
        if self._closed:
            return
        try:
            self._run(self._stop())
        finally:
            self._closed = True
            _OPEN.discard(self)
            self._loop.call_soon_threadsafe(self._loop.stop)

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        """TRL's bridge to the environment's event loop, which refuses once the loop is
        ended: a call would otherwise wait forever."""
        if self._closed:
            coro.close()
            raise CleanroomError(
                "this sealed TRL environment was closed (close_environments): make a new one"
            )
        result: T = super()._run(coro)
        return result

    def __del__(self) -> None:
        # TRL's own waits for the environment's event loop whatever the moment, and an
        # environment still referenced when the interpreter finalizes (a trainer held in a
        # module's global) would wait forever on a loop whose daemon thread no longer runs,
        # and the process would never exit: `close_environments` closes those before.
        if getattr(self, "_closed", True):  # closed, or its __init__ never finished
            return
        self._close()


class SealedHarborBashEnv(SealedHarborEnv, HarborBashEnv):
    """TRL's single-``bash``-tool harness (``HarborBashEnv``) with sealed verification."""


def outcome_of(environment: SealedHarborEnv) -> Outcome | None:
    """The cleanroom outcome of ``environment``'s current rollout, verifying it on first
    use; None before any rollout. For a reward function of the caller's own."""
    if not isinstance(environment, SealedHarborEnv):
        raise TypeError(
            f"{type(environment).__name__} is not a SealedHarborEnv: cleanroom verified "
            "none of its rollouts"
        )
    return environment._verified_outcome()


def sealed_reward(
    *,
    environments: Sequence[Any] | None = None,
    log_extra: Callable[[str, list[Any]], None] | None = None,
    log_metric: Callable[[str, float], None] | None = None,
    **kwargs: Any,
) -> list[float | None]:
    """A reward function for TRL's ``GRPOTrainer`` (``reward_funcs=[sealed_reward]``)
    that reports what cleanroom decided for each rollout of the batch.

    It logs, through the trainer's ``log_extra``, the columns `LOGGED_COLUMNS` of each
    rollout (``cleanroom_reason``...) in the completions table, and through
    ``log_metric`` the batch's `RewardTally` metrics (``cleanroom/agent_caused/tamper``,
    ``cleanroom/excluded/verifier_unavailable``, the fractions...), which the trainer
    averages over the batches of a logging step.

    It returns each rollout's reward, None when invalid, except where the environment
    already gives it through ``get_reward``: the trainer scores those in a column of
    their own and sums the columns, so this one returns None there (a NaN the trainer
    skips) and each reward counts once. The other keyword arguments TRL passes (prompts,
    completions, dataset columns, the trainer's state) are not needed.
    """
    if environments is None:
        raise TypeError(
            "sealed_reward reads each rollout's environment: use it with GRPOTrainer's "
            "environment_factory=SealedHarborBashEnv (a trainer that passes no "
            "environments to reward functions takes the environment's get_reward alone)"
        )
    outcomes = [
        outcome_of(env) if isinstance(env, SealedHarborEnv) else None for env in environments
    ]
    if log_extra is not None:
        infos = [reward_info(o) if o is not None else {} for o in outcomes]
        for column in LOGGED_COLUMNS:
            log_extra(f"{DEFAULT_PREFIX}_{column}", [info.get(column) for info in infos])
    if log_metric is not None:
        counted = RewardTally()
        for outcome in outcomes:
            if outcome is not None:
                counted.add(outcome)
        for name, value in counted.as_metrics().items():
            log_metric(name, value)
    return [
        None if outcome is None or _scores_itself(env) else reward_or_none(outcome)
        for env, outcome in zip(environments, outcomes, strict=True)
    ]


def _scores_itself(environment: Any) -> bool:
    """Whether TRL's trainers take ``environment``'s reward from its ``get_reward``: they
    do for every class that defines it as a function."""
    return inspect.isfunction(getattr(type(environment), "get_reward", None))


def close_environments() -> None:
    """Close every sealed environment still open: stop its sandbox, remove its trial
    folder and end its event loop. TRL keeps each environment's last sandbox until the
    environment is garbage-collected, which a trainer holding its pool never lets
    happen; this runs when the process ends, and may be called sooner, once the
    environments are no longer needed (after ``trainer.train()``)."""
    for environment in list(_OPEN):
        try:
            environment._close()
        except Exception:  # one sandbox that will not stop must not keep the others up
            _log.warning("could not close a sealed TRL environment", exc_info=True)


class _Anchor:
    """An object that lives as long as the process, for the finalizer below."""


_ANCHOR = _Anchor()
# Harbor keeps each sandbox's compose files in temporary folders, deleted at exit by
# `weakref.finalize`'s exit hook, which is registered with atexit at the first finalizer
# made in the process. One made here, before this module's hook, registers it first, so
# this hook (atexit runs last in, first out) stops the sandboxes while their compose files
# are still there. The environments' event loops run on daemon threads, which still serve
# while exit handlers run (and no longer once the interpreter finalizes).
weakref.finalize(_ANCHOR, lambda: None)
atexit.register(close_environments)
