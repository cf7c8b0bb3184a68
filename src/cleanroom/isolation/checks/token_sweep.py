"""Isolation test 13, token_sweep: a token anywhere it should not be.

A token names its environment by itself, so nothing needs to be known about how a token
got somewhere to see that it does not belong there. A trial first has every acting
environment write a file holding a fresh token of its own into its own home (a home
that does not show it is blind, so its rows are lost), then reads every place and
attributes every token found (`core.sweep`): a token of another environment than the
place's owners is ``cross`` from the token's environment to each owner. Every file,
selection and submission is also read for tokens in other forms (`core.token_forms`: any
case, UTF-16, base64, escapes, gzip and zip members...), under a budget of decoded bytes
per file and per environment and a deadline; what the budget left unread is reported
with the bound. The harness runs one trial at every window's close and one at the end of
the run (before the controls that plant foreign tokens on purpose); a cross row fails its
window and makes the window's rollouts invalid (``isolation``) from the earliest time the
token can have arrived (`apply_sweep`).

Only a token the run minted is cross. A token-shaped string of another environment that
nobody minted, and a selection whose owner (a program of the environment) never answers,
are the environment's own acts (`core.sweep.OwnAct`): they are returned beside the rows
(`TrialContext.swept`), never fail the window, and the harness scores the rollout that
wrote them 0 with the reason.

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
import threading
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
    Finding,
    Place,
    Reading,
    SweepJudgement,
    UnreadSpot,
    arrival_bound,
    judge_sweep,
    merge_places,
    prove,
)
from cleanroom.core.token_forms import Bound, find_forms, worth_decoding
from cleanroom.core.tokens import Token, TokenHit, scan_bytes, scan_text
from cleanroom.environments.errors import PoolError, SelectionHeld, SelectionUnanswered
from cleanroom.environments.interface import SELECTIONS, Desktops, Needs
from cleanroom.environments.leaky_setups import Leak
from cleanroom.isolation.battery import IsolationCheck, Schedule, TrialContext
from cleanroom.store.rundb import RunStore
from cleanroom.store.submissions import StoreError, SubmissionRecord, SubmissionStore
from cleanroom.tree_scan import scan_tree

NAME = SWEEP_TEST
PROOF_PREFIX = "token-sweep-"
WRITE_TIMEOUT_S = 30.0
# The longest one folder's scan may take: past it, what was not read is a blind spot, and
# the rows that relied on it are lost (never a hang, whatever an environment left there).
SCAN_DEADLINE_S = 60.0
# The cost of reading tokens in other forms, in one sweep: bytes decoded (decompressed,
# unescaped) per file and per environment (a place two environments share draws on one
# budget of its own), and the seconds one environment's decoding may take. Past them
# what was not decoded is reported (`UnreadSpot`); an environment's own bytes can spend
# only its own budget, never another's.
FILE_DECODE_BYTES = 32 << 20
ENV_DECODE_BYTES = 128 << 20
ENV_DECODE_S = 5.0
# The longest the sweep reads the verify server's submissions: the rows past it are
# reported unread with their count (each lease's are bounded by its budget, so only a
# run of very many leases reaches it).
SUBMISSIONS_SWEEP_S = 20.0
# At most this many unread spots are kept per place (the count says how many more).
UNREAD_KEPT = 50


class DecodeBudget:
    """One environment's share of a sweep's decoding: bytes left and a deadline, drawn by
    the scanner's threads."""

    def __init__(
        self, nbytes: int = ENV_DECODE_BYTES, seconds: float = ENV_DECODE_S, per_file: int = 0
    ) -> None:
        self._left = nbytes
        self._per_file = per_file or FILE_DECODE_BYTES
        self.deadline = time.monotonic() + seconds
        self._lock = threading.Lock()

    def take(self) -> tuple[int, Bound]:
        """A file's budget, and the bound that set it."""
        with self._lock:
            n = min(self._per_file, self._left)
            self._left -= n
        return n, (Bound.FILE_BYTES if n == self._per_file else Bound.ENV_BYTES)

    def give_back(self, n: int) -> None:
        with self._lock:
            self._left += n

    @property
    def left(self) -> int:
        """Bytes not yet decoded."""
        return self._left


class FormReader:
    """Reads what a place holds for tokens in other forms (`core.token_forms`), under one
    budget; collects the hits and what the bounds left unread."""

    def __init__(self, budget: DecodeBudget) -> None:
        self.budget = budget
        self.hits: list[TokenHit] = []
        self.unread: list[UnreadSpot] = []
        self.unread_count = 0
        self._lock = threading.Lock()

    def read(self, where: str, data: bytes | memoryview, size: int) -> None:
        """Read one file's, selection's or submission's bytes (``data``, the first of
        ``size``)."""
        unread = []
        if size > len(data):
            why = f"only its first {len(data)} of {size} bytes were read for other forms"
            unread.append(UnreadSpot(where, Bound.INPUT, why))
        hits: list[TokenHit] = []
        if time.monotonic() > self.budget.deadline:
            # Past the deadline nothing more is looked at, so a flood of files costs the
            # scan no more than reading them.
            why = "not read for other forms: the environment's decoding deadline had passed"
            unread.append(UnreadSpot(where, Bound.DEADLINE, why))
        elif worth_decoding(data):
            n, bound = self.budget.take()
            forms = find_forms(
                bytes(data), n, deadline=self.budget.deadline, clock=time.monotonic, bound=bound
            )
            self.budget.give_back(n - forms.decoded)
            hits = [TokenHit(h.token, where, h.outer_offset, h.form) for h in forms.hits]
            unread += [UnreadSpot(f"{where} ({u.form})", u.bound, u.detail) for u in forms.unread]
        with self._lock:
            self.hits.extend(hits)
            self.unread_count += len(unread)
            self.unread.extend(unread[: max(0, UNREAD_KEPT - len(self.unread))])

    def beside(self, strict: list[TokenHit]) -> tuple[TokenHit, ...]:
        """The strict scanner's hits and this reader's, each spot once."""
        seen = {(h.token, h.source, h.offset) for h in strict}
        return (*strict, *(h for h in self.hits if (h.token, h.source, h.offset) not in seen))

    def file(self, path: str, data: memoryview, size: int) -> None:
        """The tree scanner's hook (`tree_scan.Inspect`)."""
        self.read(path, data, size)

    def spots(self) -> tuple[UnreadSpot, ...]:
        """What was left unread, the kept spots and a line for the ones past them."""
        more = self.unread_count - len(self.unread)
        if more <= 0:
            return tuple(self.unread)
        return (*self.unread, UnreadSpot("...", Bound.INPUT, f"and {more} more unread spot(s)"))


class Budgets:
    """One `DecodeBudget` per set of owners, made on first use, for one sweep."""

    def __init__(self) -> None:
        self._by: dict[tuple[str, ...], DecodeBudget] = {}

    def of(self, owners: tuple[str, ...]) -> DecodeBudget:
        """The budget of a place owned by ``owners``."""
        return self._by.setdefault(owners, DecodeBudget())


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


def read_tree(place: Place, since: float, budget: DecodeBudget | None = None) -> Reading:
    """Scan one folder, every file in every form too; its blind spots make it
    unreadable. In a log folder only files written since ``since`` count."""
    forms = FormReader(budget or DecodeBudget())
    scan = scan_tree(place.name, deadline_s=SCAN_DEADLINE_S, inspect=forms.file)
    blind = scan.blind_spots
    if blind:
        return Reading(place, error="; ".join(map(str, blind[:3])))
    hits = list(forms.beside(scan.hits))
    if place.kind == LOGS:
        hits = [h for h in hits if _written_since(h.source, since)]
    return Reading(place, tuple(hits), unread=forms.spots())


def _written_since(path: str, since: float) -> bool:
    try:
        return Path(path).stat().st_mtime >= since
    except OSError:
        return True  # a log that cannot be looked at again still held the token


def read_clipboard(pool: Desktops, env: str, budget: DecodeBudget | None = None) -> Reading:
    """An environment's CLIPBOARD and PRIMARY, as one place, every form too. A selection
    whose owner, a program of the environment's, never answers is read as far as it can
    be (`Reading.unanswered`), and so is a display a client of it held (`Reading.held`);
    any other failure makes the place unreadable."""
    place = Place(f"{env}'s clipboard", (env,), CLIPBOARD)
    forms = FormReader(budget or DecodeBudget())
    hits: list[TokenHit] = []
    unanswered = []
    held: tuple[str, ...] = ()
    cut: list[UnreadSpot] = []
    for selection in SELECTIONS:
        where = f"{env}:{selection}"
        try:
            read = pool.read_selection(env, selection)
        except SelectionHeld:
            # A held server answers no read: the next selection would wait out its whole
            # deadline for nothing, so the place is read no further.
            held = (selection,)
            break
        except SelectionUnanswered:
            unanswered.append(selection)
            continue
        except PoolError as exc:
            return Reading(place, error=str(exc))
        text = read.text
        if read.truncated:
            # Its owner offered more than a read takes: the rest is a blind spot, named.
            cut.append(UnreadSpot(where, Bound.INPUT, "past the selection read's size cap"))
        if text:
            data = text.encode("utf-8", "surrogatepass")
            hits += scan_text(text, where)
            forms.read(where, data, len(data))
    spots = (*forms.spots(), *cut)
    return Reading(place, forms.beside(hits), None, spots, tuple(unanswered), held)


def read_submissions(
    db: Path,
    since: float,
    envs: tuple[str, ...],
    budgets: Budgets | None = None,
    deadline_s: float = SUBMISSIONS_SWEEP_S,
) -> list[Reading]:
    """Every submission stored since ``since``, each a place of its lease's environment
    written by its lease's rollout, every form too; a database that cannot be read is one
    unreadable place of every acting environment.

    The rows are streamed, one in memory at a time, for at most ``deadline_s``: what is
    left then is one place of every acting environment with the count left unread
    (`Bound.DEADLINE`), never a wait on however much the environments submitted."""
    budgets = budgets or Budgets()
    until = time.monotonic() + deadline_s
    out: list[Reading] = []
    try:
        with SubmissionStore.open_read_only(db) as store:
            last = 0
            for rec in store.iter_submitted_since(since):
                if time.monotonic() >= until:
                    left = store.count_submitted_since(since, last)
                    out.append(_submissions_unread(db, envs, last, left, deadline_s))
                    break
                out.append(_submission_reading(rec, budgets))
                last = rec.id
    except (StoreError, sqlite3.Error) as exc:
        place = Place(f"verify server submissions in {db}", envs, SUBMISSION)
        out.append(Reading(place, error=str(exc)))
    return out


def _submission_reading(rec: SubmissionRecord, budgets: Budgets) -> Reading:
    where = f"{SUBMISSION} {rec.id} (lease {rec.lease_id})"
    place = Place(where, (rec.env,), SUBMISSION, writer=rec.rollout_id)
    forms = FormReader(budgets.of(place.owners))
    forms.read(where, rec.body, len(rec.body))
    hits = forms.beside(scan_bytes(rec.body, where))
    return Reading(place, hits, unread=forms.spots())


def _submissions_unread(
    db: Path, envs: tuple[str, ...], last: int, left: int, deadline_s: float
) -> Reading:
    where = f"verify server submissions in {db} after id {last}"
    spot = UnreadSpot(where, Bound.DEADLINE, f"{left} submissions not read in {deadline_s:g} s")
    return Reading(Place(where, envs, SUBMISSION), unread=(spot,))


def read_places(pool: Desktops, since: float, submissions_db: Path | None = None) -> list[Reading]:
    """Read every place of every environment of the pool (see the module's docstring),
    each environment's under a decoding budget of its own."""
    budgets = Budgets()
    readings = [
        read_tree(p, since, budgets.of(p.owners)) for p in merge_places(tree_mentions(pool))
    ]
    readings += [read_clipboard(pool, env, budgets.of((env,))) for env in pool.names]
    if submissions_db is not None:
        acting = tuple(n for n in pool.names if n != CANARY_ENV)
        readings += read_submissions(submissions_db, since, acting, budgets)
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


def minted_tokens(ctx: TrialContext) -> set[str]:
    """Every token the run minted that can rest in a place: its rollouts' and its
    trials'."""
    return set(ctx.minted) | {r.token for r in ctx.store.rollouts()}


def sweep_before_wipe(ctx: TrialContext, trial: int, env: str) -> SweepJudgement:
    """Read one environment's folders and clipboard just before a reset or recovery wipes
    them: a foreign token resting there mid-window would be gone by the window's close.
    (A display that crashed took its clipboard with it: there is nothing left to read.)

    Only what was found (``cross``) or could not be read (``lost``) makes rows, and only
    then is evidence written; the sweep at the window's close proves that the reading
    sees (its homes' own tokens). The judgement's own acts are the environment's.
    """
    since = window_start(ctx.store, ctx.window) or time.time()
    mentions = [m for m in tree_mentions(ctx.pool) if m[1] == env]
    budgets = Budgets()
    readings = [read_tree(p, since, budgets.of(p.owners)) for p in merge_places(mentions)]
    if not any(p.part is Part.DISPLAY for p in ctx.pool.health(env)):
        readings.append(read_clipboard(ctx.pool, env, budgets.of((env,))))
    judged = judge_sweep(trial, ctx.window, readings, [env], minted_tokens(ctx))
    rows = [r for r in judged.rows if r.result is not RowResult.CLEAN]
    return SweepJudgement(rows, judged.findings, judged.own_acts, judged.unread)


def write_wipe_evidence(ctx: TrialContext, env: str, trial: int, judged: SweepJudgement) -> None:
    """What a sweep before a wipe found, under its trial's evidence folder."""
    ctx.write_evidence(
        NAME,
        trial,
        "sweep-before-wipe.json",
        {"env": env, "rows": [r.detail for r in judged.rows], **_acts_evidence(judged)},
    )


def _acts_evidence(judged: SweepJudgement) -> dict[str, object]:
    return {
        "own_acts": [
            {
                "kind": a.kind.value,
                "owners": list(a.owners),
                "where": a.where,
                "evidence": a.evidence,
            }
            for a in judged.own_acts
        ],
        "unread": [
            {"owners": list(p.owners), "where": u.where, "bound": u.bound.value, "detail": u.detail}
            for p, u in judged.unread
        ],
    }


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
        judged = judge_sweep(trial, ctx.window, readings, ctx.pool.names, minted_tokens(ctx))
        ctx.swept.append(judged)
        rows = judged.rows
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
                **_acts_evidence(judged),
            },
        )
        return rows


def apply_sweep(store: RunStore, window: int, findings: Collection[Finding]) -> int:
    """Make the window's rollouts invalid (``isolation``) when the sweep found a foreign
    token (every finding is of a token the run minted: `core.sweep.judge_sweep`): every
    rollout that ended at or after the earliest time one of them can have arrived
    (`core.sweep.arrival_bound`). Returns how many changed."""
    start = window_start(store, window)
    if not findings or start is None:
        return 0
    recorded = store.rollouts()
    rollouts = {r.rollout_id: r.started_at for r in recorded}
    windows = {w.index: w.started_at for w in store.windows()}
    after = arrival_bound([f.token for f in findings], start, rollouts, windows)
    found = "; ".join(f"{f.token} in {f.to_env}'s {f.place.kind} at {f.where}" for f in findings)
    why = f"{NAME}: a token rested outside its environment in window {window}: {found}"
    return store.invalidate_rollouts(window, after, Reason.ISOLATION, why[:1000])
