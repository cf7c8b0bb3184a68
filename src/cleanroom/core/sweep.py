"""The token sweep: tokens resting where the environment they name cannot be.

A token names its environment by itself, so a token found in a place is attributed
without a lookup. A place belongs to one or more environments (a home two environments
share belongs to both); a token the run minted for any other environment, found there in
any form, is ``cross`` from the token's environment to each owner it does not name, one
row per token and spot. A place that could not be read, or that did not show a token its
owner wrote there to prove it is seen, gives ``lost`` rows for its owners. Every other
pair is ``clean``.

What an environment's own programs can do to the sweep is their own act (`OwnAct`),
never a row, so no agent can fail a window, or name another environment, by it:

- a token-shaped string of another environment that the run never minted was written
  by whoever wrote into the place: the nonce is secret, so only a leak brings a real one;
- a selection whose owner never answers the sweep's read is the environment's own
  program holding it (the harness's own owner not answering is no act of its: the pool
  reports that as unreadable);
- a display whose server a client held (a grab) while the sweep read its selections is
  the environment's own program holding it: only the environment's programs reach it.

What the cost bounds of decoding left unread is reported (`UnreadSpot`), with the bound.

This module is the pure part: places, what was read in them, the rows, the own acts, and
how far back a foreign token can reach. Reading the places is `isolation.checks.token_sweep`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import PurePath

from cleanroom.core.canary import CANARY_ENV
from cleanroom.core.detectors import missing_tokens
from cleanroom.core.isolation import SWEEP_TEST, IsolationRow, RowResult
from cleanroom.core.outcomes import Reason
from cleanroom.core.token_forms import Bound
from cleanroom.core.tokens import Token, TokenHit

HOME = "home"
PROFILE = "program profile"
RUNTIME = "runtime folder"
LOGS = "log folder"
CLIPBOARD = "clipboard"
SUBMISSION = "verify server submission"
# Places that are folders on the host, read with the tree scanner.
TREE_KINDS = frozenset({HOME, PROFILE, RUNTIME, LOGS})


@dataclass(frozen=True)
class Place:
    """Somewhere a token can rest, and the environments it belongs to."""

    name: str  # a folder's path, "env02's clipboard", "verify server submission 12"
    owners: tuple[str, ...]
    kind: str
    # The rollout that wrote what is there, where the place itself says (a submission,
    # through its lease); None where only the owners are known.
    writer: str | None = None

    @property
    def is_tree(self) -> bool:
        return self.kind in TREE_KINDS


@dataclass(frozen=True)
class UnreadSpot:
    """Something in a place that a cost bound kept the sweep from decoding."""

    where: str  # the file, selection or submission, and the layers down to the spot
    bound: Bound
    detail: str


@dataclass(frozen=True)
class Reading:
    """What was found in one place, or why it could not be read.

    ``unanswered`` names the selections whose owner (a program of the place's
    environment, not the harness) never answered the read: the place is read as far as
    it can be, and the silence is its environment's own act. ``held`` names the selection
    whose read a server grab by a client of the display held unanswered (the display then
    answers no other read either), its environment's own act too. ``unread`` is what the
    decoding bounds left unread; none of them makes the place unreadable."""

    place: Place
    hits: tuple[TokenHit, ...] = ()
    error: str | None = None
    unread: tuple[UnreadSpot, ...] = ()
    unanswered: tuple[str, ...] = ()
    held: tuple[str, ...] = ()


@dataclass(frozen=True)
class Finding:
    """A token found in a place of an environment it does not name."""

    token: Token
    where: str  # the file, selection or submission it was in
    place: Place
    to_env: str
    form: str = ""  # the layers it was found under ("" when plain)


class ActKind(StrEnum):
    """What an environment's own programs did that the sweep saw."""

    FORGED_TOKEN = "forged token"  # another environment's token shape, never minted
    SELECTION_UNANSWERED = "selection unanswered"  # its program owned one and went silent
    DISPLAY_HELD = "display held"  # a client of its display grabbed the server


@dataclass(frozen=True)
class OwnAct:
    """An act of the place's owners' own programs: scored as the act of the rollout that
    wrote into the place, never a row of the window."""

    kind: ActKind
    place: Place
    where: str
    evidence: str  # for people: the string found and its form, the silent selection
    token: Token | None = None

    @property
    def owners(self) -> tuple[str, ...]:
        return self.place.owners


@dataclass(frozen=True)
class SweepJudgement:
    """One sweep's result: its rows, the real foreign tokens behind its cross rows, the
    owners' own acts and what the bounds left unread."""

    rows: list[IsolationRow]
    findings: list[Finding]
    own_acts: list[OwnAct]
    unread: list[tuple[Place, UnreadSpot]]


def merge_places(mentions: Iterable[tuple[str, str, str]]) -> list[Place]:
    """One place per name from ``(name, env, kind)`` mentions, owned by every environment
    that mentioned it (the first mention's kind names it). A folder inside another one
    whose owners include all of its own is read with the outer one and dropped."""
    owners: dict[str, list[str]] = {}
    kinds: dict[str, str] = {}
    for name, env, kind in mentions:
        kinds.setdefault(name, kind)
        owners.setdefault(name, [])
        if env not in owners[name]:
            owners[name].append(env)
    places = [Place(n, tuple(sorted(owners[n])), kinds[n]) for n in owners]
    trees = [p for p in places if p.is_tree]
    return [p for p in places if not (p.is_tree and _covered(p, trees))]


def _covered(place: Place, trees: Sequence[Place]) -> bool:
    path = PurePath(place.name)
    return any(
        other is not place
        and path.is_relative_to(other.name)
        and path != PurePath(other.name)
        and set(place.owners) <= set(other.owners)
        for other in trees
    )


def prove(readings: Sequence[Reading], expected: Mapping[str, Collection[str]]) -> list[Reading]:
    """The readings, where a place that did not show every token written there to prove
    it is seen (``expected``: place name to tokens) becomes unreadable: a search that
    misses what is known to be there is blind, not clean."""
    out = []
    for r in readings:
        missing = missing_tokens(expected.get(r.place.name, ()), r.hits, r.place.name)
        if r.error is None and missing is not None:
            r = replace(r, error=missing)
        out.append(r)
    return out


def foreign(readings: Iterable[Reading]) -> list[Finding]:
    """Every token found in a place of an environment it does not name, once per token,
    spot and owner."""
    seen: set[tuple[str, str, str]] = set()
    out = []
    for r in readings:
        if r.error is not None:
            continue
        for hit in r.hits:
            for owner in r.place.owners:
                key = (str(hit.token), hit.source, owner)
                if hit.env != owner and key not in seen:
                    seen.add(key)
                    out.append(Finding(hit.token, hit.source, r.place, owner, hit.form))
    return out


def judge_sweep(
    trial: int,
    window: int,
    readings: Sequence[Reading],
    envs: Sequence[str],
    minted: Collection[str],
) -> SweepJudgement:
    """The sweep's judgement over the pool's environments ``envs``: a foreign token the
    run minted (``minted``: every token the run made, as text) is a cross row; one it
    never minted is the place's owners' own act, as is a selection that never answered;
    what the bounds left unread is reported. The rows are `sweep_rows`'.

    The canary has no programs of an agent's: a forged token in a place of its is cross
    (something wrote there), and a selection of its that never answers, or a display of
    its that a client held, is unreadable."""
    readings = [
        replace(r, error=f"{', '.join((*r.unanswered, *r.held))} of the canary never answered")
        if (r.unanswered or r.held) and CANARY_ENV in r.place.owners and r.error is None
        else r
        for r in readings
    ]
    real: list[Finding] = []
    acts: list[OwnAct] = []
    forged: set[tuple[str, str]] = set()
    for f in foreign(readings):
        if str(f.token) in minted or CANARY_ENV in f.place.owners:
            real.append(f)
        elif (str(f.token), f.where) not in forged:
            forged.add((str(f.token), f.where))
            form = f" as {f.form}" if f.form else ""
            evidence = f"{f.token} (never minted){form} at {f.where}"
            acts.append(OwnAct(ActKind.FORGED_TOKEN, f.place, f.where, evidence, f.token))
    for r in readings:
        if r.error is not None:
            continue
        for selection in r.unanswered:
            evidence = f"{selection} of {r.place.name}: its owner never answered"
            acts.append(OwnAct(ActKind.SELECTION_UNANSWERED, r.place, r.place.name, evidence))
        for selection in r.held:
            evidence = (
                f"{selection} of {r.place.name}: a client of its display held the server "
                "(a grab), and the read went unanswered"
            )
            acts.append(OwnAct(ActKind.DISPLAY_HELD, r.place, r.place.name, evidence))
    unread = [(r.place, u) for r in readings for u in r.unread]
    return SweepJudgement(_rows(trial, window, readings, envs, real), real, acts, unread)


def sweep_rows(
    trial: int,
    window: int,
    readings: Sequence[Reading],
    envs: Sequence[str],
    minted: Collection[str],
) -> list[IsolationRow]:
    """The sweep's rows over the pool's environments ``envs``: a cross row for every
    foreign token the run minted (from the environment it names to the place's owner,
    the spot in the detail, the token first), a lost row for every unreadable place and
    every pair into its owners, and a clean row for every other ordered pair."""
    return judge_sweep(trial, window, readings, envs, minted).rows


def _rows(
    trial: int,
    window: int,
    readings: Sequence[Reading],
    envs: Sequence[str],
    findings: Sequence[Finding],
) -> list[IsolationRow]:
    sources = sorted(set(envs) | {f.token.env for f in findings})
    rows: list[IsolationRow] = []
    decided: set[tuple[str, str]] = set()
    for f in findings:
        src = f.token.env
        form = f" as {f.form}" if f.form else ""
        detail = f"{f.token} of {src} in {f.to_env}'s {f.place.kind} at {f.where}{form}"
        rows.append(_row(trial, window, src, f.to_env, RowResult.CROSS, detail))
        decided.add((src, f.to_env))
    blind = [r for r in readings if r.error is not None]
    read = {owner for r in readings for owner in r.place.owners}
    blind += [
        Reading(Place(f"{env}'s places", (env,), HOME), error="no place of it was read")
        for env in envs
        if env not in read
    ]
    for r in blind:
        for owner in r.place.owners:
            detail = f"{owner}'s {r.place.kind} {r.place.name} could not be read: {r.error}"
            for src in sources:
                if src != owner:
                    rows.append(_row(trial, window, src, owner, RowResult.LOST, detail))
                    decided.add((src, owner))
    for src in sources:
        for dst in envs:
            if src != dst and (src, dst) not in decided:
                rows.append(_row(trial, window, src, dst, RowResult.CLEAN, ""))
    return rows


def _row(
    trial: int, window: int, src: str, dst: str, result: RowResult, detail: str
) -> IsolationRow:
    return IsolationRow(SWEEP_TEST, trial, src, dst, result, window, detail[:500])


@dataclass(frozen=True)
class RolloutSpan:
    """When one rollout of an environment ran (``ended_at`` None: still running)."""

    rollout_id: str
    env: str
    started_at: float
    ended_at: float | None


def writing_rollouts(
    act: OwnAct, spans: Iterable[RolloutSpan], last_wipe: float | None
) -> list[str]:
    """The rollouts whose agent did what ``act`` found, for a sweep that read the place
    when its owner's last wipe (reset or recovery) before the sweep was ``last_wipe``.

    The place names its writer where it can (a submission, through its lease). Else what
    rests in a place of one environment was put there since that wipe, by the rollout
    under way at it: a rollout starts, then its reset wipes, then it acts, so the one
    that started at or before the wipe and had not ended by then is the writer, never
    the next one (whose own reset is the wipe this sweep precedes). A place several
    environments share names no one, and nor does a place whose owner was not wiped in
    the window (what rests there is older than the window's rollouts).
    """
    if act.place.writer is not None:
        return [act.place.writer]
    if len(act.owners) != 1 or last_wipe is None:
        return []
    env = act.owners[0]
    return [
        s.rollout_id
        for s in spans
        if s.env == env
        and s.started_at <= last_wipe
        and (s.ended_at is None or s.ended_at >= last_wipe)
    ]


# The reason each kind of own act scores its rollout 0 with.
ACT_REASONS = {
    ActKind.FORGED_TOKEN: Reason.FORGED_TOKEN,
    ActKind.SELECTION_UNANSWERED: Reason.SELECTION_UNANSWERED,
    ActKind.DISPLAY_HELD: Reason.DISPLAY_HELD,
}


def arrival_bound(
    tokens: Iterable[Token | None],
    window_start: float,
    rollout_starts: Mapping[str, float],
    window_starts: Mapping[int, float],
) -> float:
    """The earliest time any of the foreign ``tokens`` can have reached where it was
    found, within a window that started at ``window_start``.

    A token exists only from its own rollout's start (a trial's token, whose rollout is
    not recorded, from its window's start), and a token found at a window's close may
    have arrived at any time since; never before the window, whose rollouts are the
    ones at stake. An unknown token (None, or one of no recorded rollout or window)
    counts from the window's start. A file's modification time is no bound: whoever
    wrote the file sets it, and a later write moves it past the token's arrival.
    """
    bounds = []
    for token in tokens:
        origin = window_start
        if token is not None:
            origin = rollout_starts.get(
                token.rollout_id, window_starts.get(token.rollout.window, window_start)
            )
        bounds.append(max(window_start, origin))
    return min(bounds, default=window_start)
