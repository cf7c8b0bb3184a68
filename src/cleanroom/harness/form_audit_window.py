"""The end of a window: the verify server's audit written as isolation rows.

Every leased pair of the window gets a row; a cross row makes the rollouts it names
invalid (``isolation``). If the server cannot answer, every pair is ``lost`` (which
fails the window): an audit that could not run is never reported as clean.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cleanroom.core.canary import UNKNOWN_ENV
from cleanroom.core.isolation import IsolationRow, RowResult
from cleanroom.core.outcomes import Reason
from cleanroom.harness.form_audit_rows import (
    AUDIT_TEST,
    CrossSubmission,
    LeasedRollout,
    audit_rows,
    named_rollouts,
)
from cleanroom.store.rundb import RunStore
from cleanroom.verify_server.client import VerifierUnavailable, VerifyClient


@dataclass(frozen=True)
class AuditResult:
    """What one window's audit wrote."""

    rows: list[IsolationRow]
    cross: list[CrossSubmission]
    invalidated: int
    error: str | None = None


def audit_window(
    store: RunStore,
    client: VerifyClient,
    window: int,
    leased: Sequence[LeasedRollout],
    senders: Sequence[str] = (),
) -> AuditResult:
    """Ask the server for the window's cross submissions, store the rows, invalidate.

    ``senders`` are the environments whose tokens were in play besides the leased ones.
    """
    audit = read_audit(client, window, leased, senders)
    store.add_isolation_rows(audit.rows)
    return AuditResult(audit.rows, audit.cross, invalidate_named(store, audit.cross), audit.error)


def read_audit(
    client: VerifyClient,
    window: int,
    leased: Sequence[LeasedRollout],
    senders: Sequence[str] = (),
) -> AuditResult:
    """The window's audit as rows (``lost`` for every pair when the server cannot say)."""
    try:
        audit = client.audit(window)
    except VerifierUnavailable as exc:
        why = f"the verify server's audit could not be read: {exc.detail}"[:500]
        pairs = [(r.from_env, r.to_env) for r in audit_rows(window, leased, [], senders)]
        # Without leased pairs the fault still needs a row, or it would pass unseen.
        rows = [
            IsolationRow(AUDIT_TEST, 0, a, b, RowResult.LOST, window, why)
            for a, b in pairs or [(UNKNOWN_ENV, UNKNOWN_ENV)]
        ]
        return AuditResult(rows, [], 0, exc.detail)
    cross = [
        CrossSubmission(r.token, r.token_env, r.attributed_env, r.rollout_id) for r in audit.rows
    ]
    return AuditResult(audit_rows(window, leased, cross, senders), cross, 0)


def invalidate_named(store: RunStore, cross: Sequence[CrossSubmission]) -> int:
    """Mark the rollouts the cross submissions name invalid (``isolation``).

    Only a submitted token that the run minted for a rollout implicates anyone: a
    token-shaped string nobody minted was typed by whoever submitted it, and it never
    turns that rollout's score into an exclusion (its row stays cross).
    """
    minted = {r.token for r in store.rollouts()}
    real = [c for c in cross if c.token in minted]
    if not real:
        return 0
    why = "; ".join(f"{c.token_env}'s token reached {c.attributed_env}" for c in real)
    return store.mark_invalid(named_rollouts(real), Reason.ISOLATION, f"{AUDIT_TEST}: {why}")
