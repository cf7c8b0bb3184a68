"""Isolation test 13, token_sweep: a token anywhere it should not be.

A token names its environment by itself, so nothing needs to be known about how a token
got somewhere to see that it does not belong there. A trial first has every acting
environment write a file holding a fresh token of its own into its own home (a home
that does not show it is blind, so its rows are lost), then reads every place and
attributes every token found (`core.sweep`): a token of another environment than the
place's owners is ``cross`` from the token's environment to each owner. The harness runs
one trial at every window's close and one at the end of the run (before the controls
that plant foreign tokens on purpose); a cross row fails its window and makes the
window's rollouts invalid (``isolation``) from the earliest time the token can have
arrived (`apply_sweep`).

Places read, for every environment of the pool (the canary included):

- its home, the profile folders its programs run with, and its session's runtime folder
  (a folder two environments share, as a home under ``shared-home``, is one place owned
  by both);
- its CLIPBOARD and PRIMARY selections, read through the pool;
- its log folder in the run folder (what its programs printed), only files written since
  the window opened: older lines were read by an earlier window's sweep;
- the verify server's stored submissions since the window opened (when the context
  names its database): a submission belongs to the environment its lease names, and its
  body is scanned as received.

Not read, and why: the harness's own records (the run database, the action log, the
evidence, the harness's logs, which quote every token by design, and the control's logs
under ``logs/control``); each sandbox's private ``/tmp``, ``/dev/shm`` and IPC objects
(no other environment can reach them, and the channels test plants in and collects from
every one of them); the host's world-writable folders (only an unsandboxed environment
of the ``open-host`` leak reaches them, other programs of the machine fill them with
tokens of their own, and the channels test covers them). On the isolated pool no folder
is writable by two environments, so the shared places the sweep can meet are those a
leaky setup makes. Nothing of a control is excluded: the canary's control and the
sweep's own planted control run after the end-of-run sweep, and the audit's control is
submitted before the first window opens.

Leak it must catch: ``shared-home`` (each environment's proof file lands in the one
home both own, so each token is foreign to the other owner).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
import time
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from cleanroom.core.breakage import Part
from cleanroom.core.canary import CANARY_ENV
from cleanroom.core.isolation import SWEEP_TEST, IsolationRow, RowResult
from cleanroom.core.outcomes import Reason
from cleanroom.core.sweep import (
    CLIPBOARD,
    HOME,
    LOGS,
    PROFILE,
    RUNTIME,
    SUBMISSION,
    Place,
    Reading,
    arrival_bound,
    merge_places,
    prove,
    sweep_rows,
    swept_tokens,
)
from cleanroom.core.tokens import Token, scan_bytes
from cleanroom.environments.errors import PoolError
from cleanroom.environments.interface import Desktops, Needs
from cleanroom.environments.leaky_setups import Leak
from cleanroom.isolation.battery import IsolationCheck, Schedule, TrialContext
from cleanroom.isolation.checks.holdings import clipboard_hits
from cleanroom.store.rundb import RunStore
from cleanroom.store.submissions import StoreError, SubmissionStore
from cleanroom.tree_scan import scan_tree

NAME = SWEEP_TEST
PROOF_PREFIX = "token-sweep-"
WRITE_TIMEOUT_S = 30.0
# The longest one folder's scan may take: past it, what was not read is a blind spot, and
# the rows that relied on it are lost (never a hang, whatever an environment left there).
SCAN_DEADLINE_S = 60.0


def proof_path(home: Path, token: Token) -> Path:
    """Where an environment writes its own token to prove its home is seen."""
    return home / f"{PROOF_PREFIX}{token}.txt"


def tree_mentions(pool: Desktops) -> list[tuple[str, str, str]]:
    """Every folder of every environment as ``(absolute path, env, kind)``: lexically,
    never resolved, since a link inside an environment's home is the environment's and
    must not turn another environment's folder into its own."""
    mentions = []
    for name in pool.names:
        places = pool.places(name)
        mentions.append((str(places.home), name, HOME))
        mentions.extend((str(p), name, PROFILE) for p in places.profiles)
        mentions.append((str(places.runtime_dir), name, RUNTIME))
        mentions.append((str(places.log_dir), name, LOGS))
    return mentions


def read_tree(place: Place, since: float) -> Reading:
    """Scan one folder; its blind spots make it unreadable. In a log folder only files
    written since ``since`` count."""
    scan = scan_tree(place.name, deadline_s=SCAN_DEADLINE_S)
    blind = scan.blind_spots
    if blind:
        return Reading(place, error="; ".join(map(str, blind[:3])))
    hits = scan.hits
    if place.kind == LOGS:
        hits = [h for h in hits if _written_since(h.source, since)]
    return Reading(place, tuple(hits))


def _written_since(path: str, since: float) -> bool:
    try:
        return Path(path).stat().st_mtime >= since
    except OSError:
        return True  # a log that cannot be looked at again still held the token


def read_clipboard(pool: Desktops, env: str) -> Reading:
    """An environment's CLIPBOARD and PRIMARY, as one place."""
    place = Place(f"{env}'s clipboard", (env,), CLIPBOARD)
    try:
        return Reading(place, tuple(clipboard_hits(pool, env)))
    except PoolError as exc:
        return Reading(place, error=str(exc))


def read_submissions(db: Path, since: float, envs: tuple[str, ...]) -> list[Reading]:
    """Every submission stored since ``since``, each a place of its lease's environment;
    a database that cannot be read is one unreadable place of every acting environment."""
    try:
        with SubmissionStore.open_read_only(db) as store:
            records = store.submitted_since(since)
    except (StoreError, sqlite3.Error) as exc:
        place = Place(f"verify server submissions in {db}", envs, SUBMISSION)
        return [Reading(place, error=str(exc))]
    out = []
    for rec in records:
        where = f"{SUBMISSION} {rec.id} (lease {rec.lease_id})"
        place = Place(where, (rec.env,), SUBMISSION)
        out.append(Reading(place, tuple(scan_bytes(rec.body, where))))
    return out


def read_places(pool: Desktops, since: float, submissions_db: Path | None = None) -> list[Reading]:
    """Read every place of every environment of the pool (see the module's docstring)."""
    readings = [read_tree(p, since) for p in merge_places(tree_mentions(pool))]
    readings += [read_clipboard(pool, env) for env in pool.names]
    if submissions_db is not None:
        acting = tuple(n for n in pool.names if n != CANARY_ENV)
        readings += read_submissions(submissions_db, since, acting)
    return readings


@dataclass(frozen=True)
class Proof:
    """A file an environment wrote into its own home, holding its own token."""

    env: str
    token: Token
    path: Path
    error: str | None = None  # why it could not be written


def write_proofs(ctx: TrialContext) -> list[Proof]:
    """Every acting environment writes a fresh token of its own into its own home, as its
    own user where its programs run."""
    proofs = []
    for env in ctx.acting_envs:
        token = ctx.mint(env)
        path = proof_path(ctx.pool.places(env).home, token)
        argv = ["sh", "-c", 'printf "%s\\n" "$1" > "$2"', "sh", str(token), str(path)]
        error = None
        try:
            done = ctx.pool.run_inside(env, argv, timeout_s=WRITE_TIMEOUT_S)
            if done.code != 0:
                error = f"the write exited with {done.code}: {done.output.strip()[:200]}"
        except (PoolError, subprocess.TimeoutExpired) as exc:
            error = f"{type(exc).__name__}: {exc}"
        proofs.append(Proof(env, token, path, error))
    return proofs


def proof_readings(readings: list[Reading], proofs: list[Proof]) -> list[Reading]:
    """The readings with every home proven: a home that does not show its owner's proof
    token is unreadable, and so is one whose owner could not write it."""
    expected: dict[str, list[str]] = {}
    failed = []
    for p in proofs:
        home = os.path.abspath(p.path.parent)
        if p.error is None:
            expected.setdefault(home, []).append(str(p.token))
        else:
            why = f"{p.env} could not write its own token there: {p.error}"
            failed.append(Reading(Place(home, (p.env,), HOME), error=why))
    return prove(readings, expected) + failed


def sweep_before_wipe(ctx: TrialContext, trial: int, env: str) -> list[IsolationRow]:
    """Read one environment's folders and clipboard just before a reset or recovery wipes
    them: a foreign token resting there mid-window would be gone by the window's close.
    (A display that crashed took its clipboard with it: there is nothing left to read.)

    Only what was found (``cross``) or could not be read (``lost``) makes rows, and only
    then is evidence written; the sweep at the window's close proves that the reading
    sees (its homes' own tokens).
    """
    since = window_start(ctx.store, ctx.window) or time.time()
    mentions = [m for m in tree_mentions(ctx.pool) if m[1] == env]
    readings = [read_tree(p, since) for p in merge_places(mentions)]
    if not any(p.part is Part.DISPLAY for p in ctx.pool.health(env)):
        readings.append(read_clipboard(ctx.pool, env))
    rows = sweep_rows(trial, ctx.window, readings, [env])
    return [r for r in rows if r.result is not RowResult.CLEAN]


def write_wipe_evidence(ctx: TrialContext, env: str, rows: list[IsolationRow]) -> None:
    """What a sweep before a wipe found, under its trial's evidence folder."""
    ctx.write_evidence(
        NAME,
        rows[0].trial,
        "sweep-before-wipe.json",
        {"env": env, "rows": [r.detail for r in rows]},
    )


def window_start(store: RunStore, window: int) -> float | None:
    """When a window of the run opened, if it did."""
    return next((w.started_at for w in store.windows() if w.index == window), None)


class TokenSweepCheck(IsolationCheck):
    """Every place of every environment read for tokens of any other environment."""

    name: ClassVar[str] = NAME
    number: ClassVar[int] = 13
    schedule: ClassVar[Schedule] = Schedule(window=1, soak=1)
    detects: ClassVar[tuple[Leak, ...]] = (Leak.SHARED_HOME,)
    requires: ClassVar[Needs] = Needs(real_desktops=True, commands=True)

    def pairs(self, ctx: TrialContext) -> list[tuple[str, str]]:
        """Every environment to every other, the canary included."""
        names = ctx.pool.names
        return [(a, b) for a in names for b in names if a != b]

    def run_trial(self, ctx: TrialContext, trial: int) -> list[IsolationRow]:
        """Prove each home is seen, read every place, and attribute every token."""
        started = time.time()
        since = window_start(ctx.store, ctx.window) or started
        proofs = write_proofs(ctx)
        try:
            readings = read_places(ctx.pool, since, ctx.submissions_db)
        finally:
            for p in proofs:
                with contextlib.suppress(OSError):
                    p.path.unlink(missing_ok=True)
        readings = proof_readings(readings, proofs)
        rows = sweep_rows(trial, ctx.window, readings, ctx.pool.names)
        ctx.write_evidence(
            NAME,
            trial,
            "sweep.json",
            {
                "since": since,
                "seconds": time.time() - started,
                "proofs": {p.env: {"token": str(p.token), "error": p.error} for p in proofs},
                "places": [
                    {
                        "place": r.place.name,
                        "kind": r.place.kind,
                        "owners": list(r.place.owners),
                        "tokens": len(r.hits),
                        "error": r.error,
                    }
                    for r in readings
                ],
                "cross": [r.detail for r in rows if r.result is RowResult.CROSS],
            },
        )
        return rows


def apply_sweep(
    store: RunStore, window: int, rows: list[IsolationRow], minted: Collection[str] = ()
) -> int:
    """Make the window's rollouts invalid (``isolation``) when the sweep found a foreign
    token: every rollout that ended at or after the earliest time one of them can have
    arrived (`core.sweep.arrival_bound`). Returns how many changed.

    Only a token the run minted (a rollout's, or a trial's in ``minted``) counts here. A
    token-shaped string nobody minted was written by whoever wrote it, an agent
    included: its cross row still fails the window, but it never turns a rollout's
    score into an exclusion.
    """
    recorded = store.rollouts()
    known = set(minted) | {r.token for r in recorded}
    tokens = [t for t in swept_tokens(rows) if t is not None and str(t) in known]
    start = window_start(store, window)
    if not tokens or start is None:
        return 0
    rollouts = {r.rollout_id: r.started_at for r in recorded}
    windows = {w.index: w.started_at for w in store.windows()}
    after = arrival_bound(tokens, start, rollouts, windows)
    found = "; ".join(r.detail for r in rows if r.result is RowResult.CROSS)
    why = f"{NAME}: a token rested outside its environment in window {window}: {found}"
    return store.invalidate_rollouts(window, after, Reason.ISOLATION, why[:1000])
