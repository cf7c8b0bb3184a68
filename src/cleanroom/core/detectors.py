"""Detectors: pure functions that turn what a check read into isolation rows.

Each detector is small enough to prove with a deliberate leak (see the unit tests): the
leak must make it fire, and the clean case must not. Effects (typing, reading saved
documents, reading the clipboard, walking homes) stay in the checks that call these.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from cleanroom.core.isolation import IsolationRow, RowResult
from cleanroom.core.tokens import TokenHit


def foreign_letter_runs(text: str, foreign_alphabet: str) -> int:
    """Count maximal runs of characters from ``foreign_alphabet`` in ``text``.

    The typing half of the positive control types disjoint alphabets into two documents;
    every run of the other side's letters in a document is one cross-delivery.
    """
    if not foreign_alphabet:
        raise ValueError("the foreign alphabet is empty")
    pattern = re.compile("[" + re.escape(foreign_alphabet) + "]+")
    return sum(1 for _ in pattern.finditer(text))


def clipboard_cross_reads(
    reads: Sequence[str | None], own: str, others: Iterable[str]
) -> tuple[int, int]:
    """Count reads that returned another side's string, and reads that returned nothing.

    Returns ``(cross, unreadable)``. A read of our own string is clean; a read of any
    string set by another side is a cross-read; None means the read failed.
    """
    foreign = set(others) - {own}
    cross = sum(1 for r in reads if r is not None and r in foreign)
    unreadable = sum(1 for r in reads if r is None)
    return cross, unreadable


@dataclass(frozen=True)
class Delivery:
    """What one environment was meant to receive, and what was read back from it."""

    env: str
    expected: str
    observed: str | None  # None: the check could not read it


def delivery_rows(
    test: str,
    trial: int,
    window: int,
    deliveries: Sequence[Delivery],
    hits_by_env: dict[str, list[TokenHit]],
) -> list[IsolationRow]:
    """Rows for a trial in which every environment typed or set its own tokened text.

    For each receiving environment: a ``lost`` row if it could not be read; a ``cross``
    row from every other environment whose token was found in what it holds; otherwise
    one ``clean`` row per other environment checked. ``hits_by_env`` holds the tokens
    found in each environment's readback.
    """
    envs = [d.env for d in deliveries]
    rows: list[IsolationRow] = []
    for d in deliveries:
        if d.observed is None:
            rows.extend(
                IsolationRow(test, trial, src, d.env, RowResult.LOST, window, "unreadable")
                for src in envs
                if src != d.env
            )
            continue
        found_from = {h.env for h in hits_by_env.get(d.env, [])} - {d.env}
        for src in envs:
            if src == d.env:
                continue
            if src in found_from:
                rows.append(
                    IsolationRow(
                        test,
                        trial,
                        src,
                        d.env,
                        RowResult.CROSS,
                        window,
                        "token of the sender found",
                    )
                )
            else:
                rows.append(IsolationRow(test, trial, src, d.env, RowResult.CLEAN, window))
        for stranger in sorted(found_from - set(envs)):
            rows.append(
                IsolationRow(
                    test,
                    trial,
                    stranger,
                    d.env,
                    RowResult.CROSS,
                    window,
                    "token of an environment outside the trial found",
                )
            )
    return rows


def misplaced_tokens(hits: Iterable[TokenHit], owner_env: str) -> list[TokenHit]:
    """Tokens found in a place that belongs to ``owner_env`` but naming another environment."""
    return [h for h in hits if h.env != owner_env]


def placement_rows(
    test: str,
    trial: int,
    window: int,
    owner_env: str,
    hits: Iterable[TokenHit],
    senders: Iterable[str],
) -> list[IsolationRow]:
    """Rows for one searched place: a ``cross`` row per sender whose token was found in a
    place owned by ``owner_env``, a ``clean`` row per sender that left nothing there."""
    found = {h.env for h in misplaced_tokens(hits, owner_env)}
    rows = []
    for src in sorted(set(senders) | found):
        if src == owner_env:
            continue
        result = RowResult.CROSS if src in found else RowResult.CLEAN
        rows.append(IsolationRow(test, trial, src, owner_env, result, window))
    return rows
