"""Agents that reach a run from outside: their OSWorld episodes as rollouts of its windows.

An agent running elsewhere drives an acting environment through OSWorld's ``DesktopEnv``
interface over HTTP (`osworld_http`), as it would drive OSWorld: ``reset(task_config)``,
``step`` until it is done, ``evaluate()``. With `OutsideAgents` behind that interface,
each episode is a rollout of the harness's window, like its own smoke rollouts:

- An agent's ``reset`` waits until the harness opens a rollout in that environment
  (`gate` finds the agent waiting; the harness mints the rollout's token, records its
  start and resets the environment to a new generation). The task's setup then runs on
  the fresh environment and the agent gets its first observation. Between windows, and
  while the window runs its isolation trials, a reset waits; one that waited too long is
  answered ``not_open`` (a 503 the client retries). The episode's actions are of the
  space the agent resets with (the run's ``action_space`` when it names none).
- The agent's steps go to that generation only: after the harness's next reset they are
  refused as stale. OSWorld's in-VM server (`osworld_vm_server`), which the run serves
  beside the interface, calls the episode's controller (`controller`) while the episode
  runs, and once it is over only ends its recording (`episode_over`).
- The episode ends when the agent calls ``evaluate`` (answered with cleanroom's score, or
  ``invalid`` when the infrastructure kept the check from being made), when it resets
  again (the desktop as it is then is scored, and the new reset waits for the next
  rollout), or when it has run ``episode_s`` (the agent stalled: scored as it is then).
  Nothing the agent does turns its score into an exclusion.
- The window's isolation trials, canary and token sweep judge the rollout like any other:
  a leak in its window makes it invalid in the run record, after the agent was answered.

An environment no agent comes to within ``wait_s`` gets no rollout in that batch: a
rollout is recorded only once an agent has started it.
"""

from __future__ import annotations

import functools
import json
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cleanroom.core.errors import CleanroomError
from cleanroom.core.outcomes import Outcome, Reason, Status
from cleanroom.environments.errors import (
    BadAction,
    DisplayHeld,
    EnvironmentBroken,
    StaleGeneration,
)
from cleanroom.environments.interface import Desktops
from cleanroom.environments.osworld_env.actions import ACTION_SPACES
from cleanroom.environments.policy.handle import LocalHandle
from cleanroom.environments.policy.http import env_key
from cleanroom.rollouts.base import RolloutContext, RolloutSetupError, SmokeTask
from cleanroom.rollouts.osworld_controller import EnvironmentController
from cleanroom.rollouts.osworld_desktop_env import InvalidEvaluation, NoTask, OSWorldDesktopEnv
from cleanroom.rollouts.smoke_rollout import broken_outcome, held_outcome
from cleanroom.verifiers.osworld.settings import CheckSettings
from cleanroom.verifiers.osworld.task import TaskFileError

OUTSIDE_TASK = "osworld-agent"
DEFAULT_WAIT_S = 300.0  # how long the harness waits for an agent in each batch
DEFAULT_EPISODE_S = 900.0  # how long an agent's episode may run
RESET_WAIT_S = 240.0  # how long one reset call waits for the harness before not_open


class NotOpen(CleanroomError):
    """No rollout was opened for the agent's reset in time (between windows, or while the
    window runs its trials): retry."""


class NoEpisode(BadAction):
    """A step or evaluate with no episode running: reset first (or the episode ended)."""


@dataclass
class _Pending:
    """An agent's reset, waiting for the harness's rollout."""

    task_config: dict[str, Any] | None
    action_space: str
    done: threading.Event = field(default_factory=threading.Event)
    observation: dict[str, Any] | None = None
    error: BaseException | None = None
    # The harness is opening a rollout for it: the agent no longer withdraws it, and
    # the harness answers it (the observation, or an error) whatever happens.
    claimed: bool = False

    def answer(self, error: BaseException) -> None:
        if not self.done.is_set():
            self.error = error
            self.done.set()


@dataclass
class _Episode:
    """The agent's episode in one rollout."""

    env: OSWorldDesktopEnv
    task_id: str
    started: float
    ending: str | None = None  # why the agent's episode ended (evaluate, reset, timeout)
    # The environment broke under one of the agent's steps (its own processes, or the
    # pool's): the rollout's outcome says whose fault it was, as for any rollout.
    broke: EnvironmentBroken | StaleGeneration | None = None
    # A client of the environment's display held its server under one of the agent's
    # steps: the environment's own act, the rollout's 0.
    held: DisplayHeld | None = None
    # The pool or the guest failed under one of the agent's steps: the rollout is invalid.
    fault: str | None = None
    scored: threading.Event = field(default_factory=threading.Event)
    score: float | None = None
    outcome: Outcome | None = None  # the scored episode's (success or failure)
    invalid: Outcome | None = None


@dataclass
class _Slot:
    pending: _Pending | None = None
    episode: _Episode | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)  # one agent call at a time


class OutsideAgents:
    """The environments of ``pool`` as outside agents see them, one episode per rollout."""

    def __init__(
        self,
        pool: Desktops,
        *,
        action_space: str = "pyautogui",
        settings: CheckSettings | None = None,  # None: each environment's own screen
        wait_s: float = DEFAULT_WAIT_S,
        episode_s: float = DEFAULT_EPISODE_S,
        reset_wait_s: float = RESET_WAIT_S,
        stopping: threading.Event | None = None,
        require_a11y_tree: bool = True,
    ) -> None:
        self.pool = pool
        self.require_a11y_tree = require_a11y_tree
        self.action_space = action_space
        self.settings = settings
        self.wait_s = wait_s
        self.episode_s = episode_s
        self.reset_wait_s = reset_wait_s
        self.stopping = stopping or threading.Event()
        self._slots: dict[str, _Slot] = {}
        self._changed = threading.Condition()

    # -- what the HTTP interface calls (`osworld_http.build_osworld_app`) -------------------

    def reset(
        self, name: str, task_config: dict[str, Any] | None, action_space: str | None = None
    ) -> dict[str, Any]:
        """End the agent's episode here (scored as it is), then wait for the harness's
        next rollout in ``name`` and set the task up on it; its first observation. The
        episode's actions are of ``action_space`` (the run's when None), as an agent's
        ``DesktopEnv`` is built for its own space."""
        space = self.action_space if action_space is None else action_space
        if space not in ACTION_SPACES:
            raise BadAction(f"action_space={space!r}: choose {', '.join(ACTION_SPACES)}")
        slot = self._slot(name)
        pending = _Pending(task_config, space)
        with self._changed:
            if slot.episode is not None and slot.episode.ending is None:
                slot.episode.ending = "the agent reset before evaluating"
            if slot.pending is not None:  # an earlier reset still waiting: this one wins,
                # and takes its place in the rollout the harness may be opening for it
                pending.claimed = slot.pending.claimed
                slot.pending.answer(NotOpen(f"a later reset of {name} came after this one"))
            slot.pending = pending
            self._changed.notify_all()
        deadline = time.monotonic() + self.reset_wait_s
        while not pending.done.wait(1.0):
            with self._changed:
                late = time.monotonic() >= deadline or self.stopping.is_set()
                if late and slot.pending is pending and not pending.claimed:
                    slot.pending = None  # not taken: withdrawn
                    raise NotOpen(f"no rollout opened in {name} in {self.reset_wait_s:g} s")
        if pending.error is not None:
            raise pending.error
        assert pending.observation is not None
        return pending.observation

    def step(
        self, name: str, action: Any, pause: float
    ) -> tuple[dict[str, Any], float, bool, dict]:
        slot = self._slot(name)
        with slot.lock:
            episode = self._running(slot, name)
            try:
                return episode.env.step(action, pause=pause)
            except BadAction:  # the agent's malformed action: refused, its episode goes on
                raise
            except DisplayHeld as exc:  # a client of its own display grabbed the server
                self._end(episode, f"its display was held: {exc}", held=exc)
                raise
            except (EnvironmentBroken, StaleGeneration) as exc:
                if isinstance(exc, EnvironmentBroken) or exc.left_by is not None:
                    self._end(episode, f"the environment broke: {exc}", broke=exc)
                else:  # reset under the episode: the harness's doing
                    self._end(episode, f"the infrastructure failed: {exc}", fault=str(exc))
                raise
            except Exception as exc:  # the pool or the guest failed under the step
                why = f"{type(exc).__name__}: {exc}"[:500]
                self._end(episode, f"the infrastructure failed: {why}", fault=why)
                raise

    def evaluate(self, name: str) -> Outcome:
        """End the agent's episode and wait for cleanroom's score of it: its outcome
        (`InvalidEvaluation` when the infrastructure kept it from being made)."""
        slot = self._slot(name)
        with self._changed:
            episode = self._running(slot, name)
            episode.ending = "evaluated"
            self._changed.notify_all()
        while not episode.scored.wait(1.0):
            if self.stopping.is_set():
                raise NotOpen("the run is stopping")
        if episode.invalid is not None:
            raise InvalidEvaluation(episode.invalid)
        assert episode.outcome is not None
        return episode.outcome

    def controller(self, name: str) -> EnvironmentController | None:
        """OSWorld's controller of the agent's latest episode in ``name`` (None before
        its first): what its in-VM server's routes call (`episode_over` says which still
        answer). After the harness's next reset its calls are refused as stale."""
        episode = self._latest(name)
        return episode.env.controller if episode is not None else None

    def episode_over(self, name: str) -> bool:
        """Whether the agent's latest episode in ``name`` has ended (or none began)."""
        episode = self._latest(name)
        return episode is None or episode.ending is not None

    def check(self, name: str) -> None:
        """Raise `UnknownEnvironment` for a name that is not one of the pool's."""
        self._slot(name)

    # -- what the harness calls ---------------------------------------------------------

    def gate(self, name: str) -> Callable[[], None] | None:
        """Claim the reset of an agent waiting to start a rollout in ``name``, after
        waiting up to ``wait_s`` for one (or until the run stops); None when none came.
        The harness calls what it returns once the rollout is over, however it ended:
        a reset the rollout never took is then answered ``not_open``."""
        slot = self._slot(name)
        deadline = time.monotonic() + self.wait_s
        with self._changed:
            while slot.pending is None:
                left = deadline - time.monotonic()
                if left <= 0 or self.stopping.is_set():
                    return None
                self._changed.wait(min(left, 1.0))
            pending = slot.pending
            pending.claimed = True
        return functools.partial(self._release, slot, pending)

    def _release(self, slot: _Slot, pending: _Pending) -> None:
        with self._changed:
            if slot.pending is pending:
                slot.pending = None
        pending.answer(NotOpen("the run could not open a rollout for this reset"))

    def task(self, _verify: object = None) -> SmokeTask:
        """A rollout of the harness: the episode of the agent waiting in its environment."""
        return OutsideAgentTask(self)

    # -- beneath ----------------------------------------------------------------------

    def _end(
        self,
        episode: _Episode,
        why: str,
        *,
        broke: EnvironmentBroken | StaleGeneration | None = None,
        fault: str | None = None,
        held: DisplayHeld | None = None,
    ) -> None:
        with self._changed:
            if episode.ending is None:
                episode.ending = why
            episode.broke = episode.broke or broke
            episode.held = episode.held or held
            episode.fault = episode.fault or fault
            self._changed.notify_all()

    def _slot(self, name: str) -> _Slot:
        with self._changed:
            if name not in self._slots:
                self.pool.generation(name)  # an unknown environment raises here
                self._slots[name] = _Slot()
            return self._slots[name]

    def _latest(self, name: str) -> _Episode | None:
        with self._changed:
            slot = self._slots.get(name)
            return slot.episode if slot is not None else None

    def _running(self, slot: _Slot, name: str) -> _Episode:
        episode = slot.episode
        if episode is None or episode.ending is not None:
            raise NoEpisode(f"no episode runs in {name}: reset first")
        return episode

    def _open(self, ctx: RolloutContext) -> _Episode:
        """Take the agent's waiting reset for the rollout of ``ctx`` and set its task up."""
        if not isinstance(ctx.handle, LocalHandle):
            raise RolloutSetupError("an outside agent's rollout needs the pool in this process")
        slot = self._slot(ctx.env)
        with self._changed:
            pending, slot.pending = slot.pending, None
        if pending is None:
            raise RolloutSetupError(f"no agent is waiting in {ctx.env}")
        env = OSWorldDesktopEnv(
            ctx.handle,
            action_space=pending.action_space,
            settings=self.settings,
            require_a11y_tree=self.require_a11y_tree,
        )
        task_id = str((pending.task_config or {}).get("id", ""))[:200]
        episode = _Episode(env, task_id, time.monotonic())
        try:
            pending.observation = env.begin(pending.task_config)
        except TaskFileError as exc:  # the agent's task config is malformed: its episode
            episode.ending = f"the agent's task config was refused: {exc}"[:500]
            pending.error = BadAction(str(exc))
        except Exception as exc:  # the harness could not set the task up: not the agent's
            pending.error = exc
            raise
        finally:
            with self._changed:
                previous, slot.episode = slot.episode, episode
            pending.done.set()
            # A recording the last episode's agent never ended stops with it.
            if previous is not None and previous.env.controller.recorder.running:
                previous.env.controller.recorder.stop()
        return episode

    def _await_end(self, episode: _Episode) -> None:
        """Until the agent ends its episode, runs out of time, or the run stops."""
        deadline = episode.started + self.episode_s
        with self._changed:
            while episode.ending is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    episode.ending = f"the agent ran out of its {self.episode_s:g} s"
                    return
                if self.stopping.is_set():
                    return
                self._changed.wait(min(left, 1.0))


class OutsideAgentTask(SmokeTask):
    """One rollout: the outside agent's episode, scored by cleanroom's OSWorld checker."""

    name = OUTSIDE_TASK

    def __init__(self, agents: OutsideAgents) -> None:
        self.agents = agents
        self._episode: _Episode | None = None

    def policy(self, ctx: RolloutContext) -> None:
        self._episode = self.agents._open(ctx)
        self.agents._await_end(self._episode)
        # The agent's own steps end with its episode: wait for one still running.
        with self.agents._slot(ctx.env).lock:
            pass

    def verify(self, ctx: RolloutContext) -> Outcome:
        episode = self._episode
        if episode is None:
            raise RolloutSetupError("the agent's episode never opened")
        try:
            return self._score(episode)
        finally:
            if episode.score is None and episode.invalid is None:  # a harness fault
                episode.invalid = Outcome.invalid(
                    Reason.HARNESS_ERROR, "the harness failed to score the episode"
                )
            episode.scored.set()

    def _score(self, episode: _Episode) -> Outcome:
        if episode.fault is not None:
            episode.invalid = Outcome.invalid(Reason.ENVIRONMENT_ERROR, episode.fault)
            return episode.invalid
        if episode.held is not None:
            episode.score, episode.outcome = 0.0, held_outcome(episode.held)
            return episode.outcome
        broke = episode.broke
        if broke is not None:  # whose fault it was decides, as for any rollout
            breakage = broke.breakage if isinstance(broke, EnvironmentBroken) else broke.left_by
            assert breakage is not None
            outcome = broken_outcome(breakage, str(broke))
            if outcome.status is Status.INVALID:
                episode.invalid = outcome
            else:
                episode.score, episode.outcome = 0.0, outcome
            return outcome
        details = {"task": episode.task_id, "ended": episode.ending or "the run stopped"}
        try:
            score = episode.env.evaluate()
        except InvalidEvaluation as exc:
            episode.invalid = exc.outcome
            return exc.outcome
        except NoTask as exc:  # the agent gave no task, or a malformed one: its 0
            score = 0.0
            details["ended"] = f"{details['ended']}; not scored: {exc}"[:500]
        outcome = (Outcome.success if score > 0 else Outcome.failure)(score, **details)
        episode.score, episode.outcome = score, outcome
        return outcome


CONNECTION_FILE = "osworld-agents.json"


def write_connection(
    run_dir: Path,
    url: str,
    key: str,
    envs: Sequence[str],
    *,
    vm_address: str | None = None,
    screen: tuple[int, int] | None = None,
) -> Path:
    """Write what outside agents need to reach their environments into ``run_dir``,
    readable by its owner only: the interface's URL, each environment's own key, and,
    when the run serves OSWorld's in-VM server, its address and the screens' size
    (`osworld_http.read_connection` reads it)."""
    path = run_dir / CONNECTION_FILE
    record: dict[str, Any] = {"url": url, "envs": {name: env_key(key, name) for name in envs}}
    if vm_address is not None:
        record["vm_address"] = vm_address
    if screen is not None:
        record["screen"] = {"width": screen[0], "height": screen[1]}
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump(record, out, indent=2)
    return path
