"""Smoke rollouts on the harness's in-process pool: one per acting environment, in parallel.

Each rollout gets a token and a start record before it acts; its outcome comes from
`rollouts.smoke_rollout` (the one place that decides a smoke rollout's outcome). A fault of the
harness itself (anything the task did not anticipate) is an ``invalid`` outcome with the
error as its detail, never a score. Once the harness is stopping, a rollout that is
still running is left unfinished, so the run database records it as interrupted.
"""

from __future__ import annotations

import threading
import traceback
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from cleanroom.core.outcomes import Outcome, Reason
from cleanroom.core.tokens import Token, mint
from cleanroom.environments.interface import Desktops, status_of
from cleanroom.environments.policy.handle import LocalHandle
from cleanroom.harness.form_audit_rows import LeasedRollout
from cleanroom.rollouts.base import RolloutContext, SmokeTask
from cleanroom.rollouts.registry import VerifySupplier, make_smoke_task
from cleanroom.rollouts.smoke_rollout import attempt_rollout, next_rollout_id, reset_for_rollout
from cleanroom.store.rundb import RunStore
from cleanroom.verify_server.client import VerifyClient

# Whether a rollout of a gated task runs in an environment: None for no, or what to call
# once the rollout is over.
Gate = Callable[[str], Callable[[], None] | None]


@dataclass(frozen=True)
class SmokeRecord:
    """One smoke rollout as it ended (``outcome`` None when the harness stopped first)."""

    token: Token
    task: str
    outcome: Outcome | None
    leased: bool


class SmokeRunner:
    """Runs batches of smoke rollouts against one pool, recording them in the run."""

    def __init__(
        self,
        pool: Desktops,
        store: RunStore,
        verify: VerifyClient,
        stopping: threading.Event,
        on_done: Callable[[SmokeRecord], None] | None = None,
        tasks: Mapping[str, Callable[[VerifySupplier], SmokeTask]] | None = None,
        gates: Mapping[str, Gate] | None = None,
    ) -> None:
        self.pool = pool
        self.store = store
        self.verify = verify
        self.stopping = stopping
        self.on_done = on_done
        # Tasks beside the smoke tasks' table, by name (an OSWorld task an agent drives).
        self.tasks = dict(tasks or {})
        # Before a rollout of a task with a gate: whether it runs in that environment this
        # batch (an outside agent's rollout runs only once its agent came), and what to
        # call once it is over.
        self.gates = dict(gates or {})
        self._ids = threading.Lock()

    def run_batch(self, window: int, assignments: Sequence[tuple[str, str]]) -> list[SmokeRecord]:
        """Run one rollout per ``(env, task)`` at the same time; return them as they ended
        (without those a gate kept from running)."""
        with ThreadPoolExecutor(
            max_workers=max(1, len(assignments)), thread_name_prefix="rollout"
        ) as ex:
            futures = [ex.submit(self._gated, window, env, task) for env, task in assignments]
            return [r for r in (f.result() for f in futures) if r is not None]

    def _gated(self, window: int, env: str, task_name: str) -> SmokeRecord | None:
        gate = self.gates.get(task_name)
        release = gate(env) if gate is not None else None
        if gate is not None and release is None:
            return None
        try:
            return self.run_one(window, env, task_name)
        finally:
            if release is not None:
                release()

    def leased(self, records: Sequence[SmokeRecord]) -> list[LeasedRollout]:
        """The rollouts that held a verify-server lease (the audit checks their pairs)."""
        return [LeasedRollout(r.token.env, r.token.rollout_id) for r in records if r.leased]

    def run_one(self, window: int, env: str, task_name: str) -> SmokeRecord:
        """One rollout of ``task_name`` in ``env``, from its token to its stored outcome."""
        with self._ids:  # ids are counted from the database: take one at a time
            token = mint(next_rollout_id(self.store, env, window))
            self.store.start_rollout(token, task_name)
        ctx = self._context(token, env)
        verified = False
        try:
            outcome = reset_for_rollout(ctx)
            if outcome is None:
                build = self.tasks.get(task_name)
                task = (
                    build(self._verify_client)
                    if build
                    else make_smoke_task(task_name, self._verify_client)
                )
                outcome = attempt_rollout(task, ctx)
                verified = True
        except Exception as exc:  # a harness fault is an invalid rollout, never a score
            detail = f"harness fault: {type(exc).__name__}: {exc}"
            self._write_fault(token, traceback.format_exc())
            outcome = Outcome.invalid(Reason.ENVIRONMENT_ERROR, detail[:500])
        leased = "lease" in ctx.state
        if self.stopping.is_set():
            # What the rollout saw while the pool was being stopped is not its result.
            record = SmokeRecord(token, task_name, None, leased)
        else:
            self.store.finish_rollout(token.rollout_id, outcome)
            if verified:
                self.store.add_verifier_result(token.rollout_id, f"smoke:{task_name}", outcome)
            record = SmokeRecord(token, task_name, outcome, leased)
        if self.on_done is not None:
            self.on_done(record)
        return record

    def _verify_client(self) -> VerifyClient:
        return self.verify

    def _context(self, token: Token, env: str) -> RolloutContext:
        pool = self.pool
        return RolloutContext(
            token=token,
            env=env,
            handle=LocalHandle(pool, env),
            run_dir=pool.run_dir,
            open_url=pool.open_url,
            home_of=lambda: pool.places(env).home,
            env_details=lambda name: status_of(pool, name),
        )

    def _write_fault(self, token: Token, text: str) -> None:
        folder = self.pool.run_dir / "faults"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{token.rollout_id}.txt").write_text(text)
