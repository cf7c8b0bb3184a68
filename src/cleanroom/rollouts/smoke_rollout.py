"""Running one smoke rollout against the running pool, start to stored outcome.

This is the one place that decides a smoke rollout's outcome: setup failures and a
pool that falls over mid-rollout are ``invalid`` with their reason, never a score of 0,
unless what fell over is what only the agent's own processes act on (`core.breakage`):
that is the agent's 0, ``environment_broken``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from cleanroom.core.breakage import Breakage
from cleanroom.core.outcomes import Cause, Outcome, Reason
from cleanroom.core.tokens import RolloutId, Token, mint
from cleanroom.environments.errors import (
    DisplayHeld,
    EnvironmentBroken,
    PoolError,
    SelectionUnanswered,
    StaleGeneration,
)
from cleanroom.environments.providers import PoolProcess
from cleanroom.rollouts.base import RolloutContext, RolloutSetupError, SmokeTask, noop_policy
from cleanroom.rollouts.registry import make_smoke_task
from cleanroom.store.rundb import RunStore

if TYPE_CHECKING:
    from cleanroom.verify_server.client import VerifyClient


@dataclass(frozen=True)
class RolloutReport:
    """What one rollout did and how it ended."""

    token: Token
    task: str
    env: str
    outcome: Outcome
    seconds: float


def make_task(
    name: str, stack: ExitStack, run_dir: Path, verify_url: str | None, verify_key: str | None
) -> SmokeTask:
    """The task object for a name; the form task gets a verify server (given or started)."""

    def verify() -> VerifyClient:
        from cleanroom.verify_server.client import VerifyClient

        url, key = verify_url, verify_key
        if url is None or key is None:
            from cleanroom.verify_server.process import VerifyServerProcess

            server = VerifyServerProcess.start(run_dir / "verify")
            stack.callback(server.stop)
            url, key = server.url, server.key
        return stack.enter_context(VerifyClient(url, key))

    return make_smoke_task(name, verify)


def next_rollout_id(store: RunStore, env: str, window: int) -> RolloutId:
    """The next free rollout id of ``env`` in ``window``."""
    taken = [r for r in store.rollouts(window) if r.env == env]
    return RolloutId(env, window, len(taken) + 1)


def run_rollout(
    task_name: str,
    env: str,
    pool: PoolProcess,
    *,
    window: int = 0,
    do_nothing: bool = False,
    verify_url: str | None = None,
    verify_key: str | None = None,
) -> RolloutReport:
    """Run one rollout of ``task_name`` in ``env`` of the running pool and store it."""
    started = time.monotonic()
    store = RunStore.open(pool.run_dir, owner=False)  # the supervisor owns the run
    client = pool.client()
    with ExitStack() as stack:
        stack.callback(store.close)
        stack.callback(client.close)
        task = make_task(task_name, stack, pool.run_dir, verify_url, verify_key)
        token = mint(next_rollout_id(store, env, window))
        store.start_rollout(token, task_name)
        handle = client.handle(env)
        ctx = RolloutContext(
            token,
            env,
            handle,
            pool.run_dir,
            client.open_url,
            home_of=lambda: Path(_home_of(client.status(), env)),
        )
        outcome = reset_for_rollout(ctx)
        verified = outcome is None
        if outcome is None:
            outcome = attempt_rollout(task, ctx, do_nothing=do_nothing)
        store.finish_rollout(token.rollout_id, outcome)
        if verified:
            store.add_verifier_result(token.rollout_id, f"smoke:{task_name}", outcome)
    return RolloutReport(token, task_name, env, outcome, time.monotonic() - started)


def reset_for_rollout(ctx: RolloutContext) -> Outcome | None:
    """Reset the environment so the rollout starts from the template at a new generation;
    None when that worked, else the rollout's (invalid) outcome."""
    try:
        ctx.handle.reset()
    except PoolError as exc:
        return Outcome.invalid(Reason.ENVIRONMENT_ERROR, f"reset failed: {exc}")
    return None


def attempt_rollout(task: SmokeTask, ctx: RolloutContext, *, do_nothing: bool = False) -> Outcome:
    """Set the task up, let the policy act and verify; the caller records the outcome."""
    policy: Callable[[RolloutContext], None] = noop_policy if do_nothing else task.policy
    return _attempt(task, policy, ctx)


def _attempt(
    task: SmokeTask, policy: Callable[[RolloutContext], None], ctx: RolloutContext
) -> Outcome:
    try:
        task.setup(ctx)
        policy(ctx)
        return task.verify(ctx)
    except RolloutSetupError as exc:
        return Outcome.invalid(Reason.ENVIRONMENT_ERROR, f"setup: {exc}")
    except StaleGeneration as exc:
        if exc.left_by is not None:
            return broken_outcome(exc.left_by, str(exc))
        return Outcome.invalid(
            Reason.ENVIRONMENT_ERROR, f"the environment was reset under the rollout: {exc}"
        )
    except EnvironmentBroken as exc:
        return broken_outcome(exc.breakage, str(exc))
    except DisplayHeld as exc:  # a client of its own display grabbed the server
        return held_outcome(exc)
    except SelectionUnanswered as exc:  # its own program holds the selection, mute
        return Outcome.agent_fault(Reason.SELECTION_UNANSWERED, str(exc))
    except PoolError as exc:
        return Outcome.invalid(Reason.ENVIRONMENT_ERROR, f"the pool failed: {exc}")
    finally:
        task.teardown(ctx)


def broken_outcome(breakage: Breakage, detail: str) -> Outcome:
    """The outcome of a rollout whose environment broke under it: the agent's 0 when its
    own processes broke it, else invalid (`core.breakage` decides which)."""
    if breakage.cause is Cause.AGENT:
        return Outcome.agent_fault(Reason.ENVIRONMENT_BROKEN, detail)
    return Outcome.invalid(Reason.ENVIRONMENT_ERROR, detail)


def held_outcome(held: DisplayHeld) -> Outcome:
    """The outcome of a rollout whose environment's display a client held (a server
    grab) while the harness observed or acted there: its own act, scored 0, with the
    server as it was seen."""
    return Outcome.agent_fault(
        Reason.DISPLAY_HELD,
        str(held),
        doing=held.doing,
        server_pid=held.server_pid,
        unread=held.unread,
    )


def _home_of(status: dict[str, object], env: str) -> str:
    for e in status["environments"]:  # type: ignore[attr-defined]
        if e["name"] == env:
            return str(e["home"])
    raise PoolError(f"the pool has no environment {env!r}")
