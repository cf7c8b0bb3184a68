"""Turning the verify server's audit into isolation rows and invalid rollouts.

At the end of every window the harness asks the verify server which submissions carried
a token of another environment than the one the lease attributed them to. Each becomes a
``cross`` row; every other leased pair of that window was checked too and is ``clean``.
The rollouts on both ends of a cross row cannot be trusted.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass

from cleanroom.core.isolation import IsolationRow, RowResult
from cleanroom.core.tokens import TokenError, parse

AUDIT_TEST = "form_audit"


@dataclass(frozen=True)
class LeasedRollout:
    """A rollout that held a lease in the window: its environment and id."""

    env: str
    rollout_id: str


@dataclass(frozen=True)
class CrossSubmission:
    """One audit row: a token of ``token_env`` submitted through a lease of ``attributed_env``."""

    token: str
    token_env: str
    attributed_env: str
    rollout_id: str  # the rollout holding the lease it came through


def audit_rows(
    window: int,
    leased: Iterable[LeasedRollout],
    cross: Iterable[CrossSubmission],
    senders: Iterable[str] = (),
) -> list[IsolationRow]:
    """One row per ordered pair (sender, leased environment): cross where the audit says so.

    Every leased environment is a receiver; the senders are every environment whose
    tokens were in play in the window (the leased ones, plus ``senders``): a token of
    any of them arriving through another's lease would have been seen.
    """
    envs = sorted({r.env for r in leased})
    sources = sorted(set(envs) | set(senders))
    crossed = {(c.token_env, c.attributed_env) for c in cross}
    rows = []
    for to_env in envs:
        for from_env in sources:
            if from_env == to_env:
                continue
            result = RowResult.CROSS if (from_env, to_env) in crossed else RowResult.CLEAN
            rows.append(IsolationRow(AUDIT_TEST, 0, from_env, to_env, result, window))
    for from_env, to_env in sorted(crossed):
        if from_env not in sources or to_env not in envs:
            rows.append(
                IsolationRow(
                    AUDIT_TEST,
                    0,
                    from_env,
                    to_env,
                    RowResult.CROSS,
                    window,
                    "an environment without a lease in this window",
                )
            )
    return rows


def named_rollouts(cross: Iterable[CrossSubmission]) -> set[str]:
    """Rollouts a cross row names: the token's own rollout and the lease's rollout."""
    names: set[str] = set()
    for c in cross:
        names.add(c.rollout_id)
        try:
            names.add(parse(c.token).rollout_id)
        except TokenError:
            continue
    return names


def split_forged(
    cross: Iterable[CrossSubmission], minted: Collection[str]
) -> tuple[list[CrossSubmission], list[CrossSubmission]]:
    """The cross submissions as ``(real, forged)``: a token the run minted (``minted``,
    as text) crossed; a token-shaped string it never minted was typed by whoever
    submitted it, the lease's rollout: its own act, which no row may carry."""
    real: list[CrossSubmission] = []
    forged: list[CrossSubmission] = []
    for c in cross:
        try:
            text = str(parse(c.token))  # the canonical form of the token as submitted
        except TokenError:
            text = c.token
        (real if text in minted else forged).append(c)
    return real, forged
