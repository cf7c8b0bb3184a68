"""The end of a window: the verify server's audit written as isolation rows.

Every leased pair of the window gets a row; a cross row makes the rollouts it names
invalid (``isolation``). If the server cannot answer, every pair is ``lost`` (which
fails the window): an audit that could not run is never reported as clean. A submitted
token-shaped string that the run never minted is no row: it is the submitting rollout's
own act, scored 0 (``forged_token``).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from cleanroom.core.canary import UNKNOWN_ENV
from cleanroom.core.isolation import IsolationRow, RowResult
from cleanroom.core.outcomes import Reason
from cleanroom.harness.form_audit_rows import (
    AUDIT_TEST,
    CrossSubmission,
    LeasedRollout,
    audit_rows,
    named_rollouts,
    split_forged,
)
from cleanroom.store.rundb import RunStore
from cleanroom.verify_server.client import AuditOverrun, VerifierUnavailable, VerifyClient


@dataclass(frozen=True)
class AuditResult:
    """What one window's audit wrote."""

    rows: list[IsolationRow]
    cross: list[CrossSubmission]
    invalidated: int
    error: str | None = None
    # Submitted strings of a token's shape that the run never minted, and how many of
    # their rollouts were scored 0 for them.
    forged: list[CrossSubmission] = field(default_factory=list)
    scored: int = 0
    # Leases of the window that tried to submit past their budget (scored 0 too).
    overruns: list[AuditOverrun] = field(default_factory=list)


def audit_window(
    store: RunStore,
    client: VerifyClient,
    window: int,
    leased: Sequence[LeasedRollout],
    senders: Sequence[str] = (),
    minted: Collection[str] = (),
) -> AuditResult:
    """Ask the server for the window's cross submissions, store the rows, invalidate the
    rollouts a real one names, and score 0 the rollouts that submitted a forged one.

    ``senders`` are the environments whose tokens were in play besides the leased ones;
    ``minted`` the tokens the run's trials minted (its rollouts' are in ``store``).
    """
    known = set(minted) | {r.token for r in store.rollouts()}
    audit = read_audit(client, window, leased, senders, known)
    store.add_isolation_rows(audit.rows)
    scored = score_forged(store, audit.forged) + score_overruns(store, audit.overruns)
    invalidated = invalidate_named(store, audit.cross)
    return AuditResult(
        audit.rows, audit.cross, invalidated, audit.error, audit.forged, scored, audit.overruns
    )


def score_forged(store: RunStore, forged: Sequence[CrossSubmission]) -> int:
    """Score 0 (``forged_token``) every rollout that submitted a token-shaped string the
    run never minted; return how many changed."""
    scored = 0
    for c in forged:
        why = f"{AUDIT_TEST}: submitted {c.token}, of {c.token_env}'s shape, never minted"
        scored += store.mark_agent_fault([c.rollout_id], Reason.FORGED_TOKEN, why)
    return scored


def score_overruns(store: RunStore, overruns: Sequence[AuditOverrun]) -> int:
    """Score 0 (``submission_budget``) every rollout whose lease tried to submit past its
    budget; return how many changed."""
    scored = 0
    for o in overruns:
        why = f"{AUDIT_TEST}: lease {o.lease_id} of {o.env} submitted past its {o.kind} budget"
        scored += store.mark_agent_fault([o.rollout_id], Reason.SUBMISSION_BUDGET, why)
    return scored


def read_audit(
    client: VerifyClient,
    window: int,
    leased: Sequence[LeasedRollout],
    senders: Sequence[str] = (),
    minted: Collection[str] | None = None,
) -> AuditResult:
    """The window's audit as rows (``lost`` for every pair when the server cannot say).
    With ``minted``, a token it does not hold is forged: no row, in `AuditResult.forged`."""
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
    forged: list[CrossSubmission] = []
    if minted is not None:
        cross, forged = split_forged(cross, minted)
    rows = audit_rows(window, leased, cross, senders)
    return AuditResult(rows, cross, 0, forged=forged, overruns=list(audit.overruns))


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
