"""Detectors: pure functions that turn what a check read into isolation rows.

Each detector is small enough to prove with a deliberate leak (see the unit tests): the
leak must make it fire, and the clean case must not. Effects (typing, reading saved
documents, reading the clipboard, walking homes) stay in the checks that call these.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol

from cleanroom.core.isolation import IsolationRow, RowResult
from cleanroom.core.tokens import TokenHit, scan_text


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


BLIND = "its own text was not found in what was read back"


def unless_seen(rows: Iterable[IsolationRow], missing: str | None) -> list[IsolationRow]:
    """A trial's rows, given what of its own signal it did not see (None: it saw it all).

    A trial that did not observe its own environment's expected input cannot show that
    nothing else arrived: its ``clean`` rows become ``lost``, saying what was missing.
    ``cross`` rows stay: a leak that was seen was seen.
    """
    if missing is None:
        return list(rows)
    return [
        IsolationRow(r.test, r.trial, r.from_env, r.to_env, RowResult.LOST, r.window, missing)
        if r.result is RowResult.CLEAN
        else r
        for r in rows
    ]


def missing_tokens(wanted: Iterable[str], hits: Iterable[TokenHit], where: str) -> str | None:
    """What a search of ``where`` did not find of the tokens ``wanted`` (None: all found)."""
    found = {str(h.token) for h in hits}
    lost = sorted(set(wanted) - found)
    if not lost:
        return None
    return f"{len(lost)} of its own token(s) not found in {where}: {', '.join(lost)}"[:500]


def delivery_rows(
    test: str,
    trial: int,
    window: int,
    deliveries: Sequence[Delivery],
    hits_by_env: dict[str, list[TokenHit]],
) -> list[IsolationRow]:
    """Rows for a trial in which every environment typed or set its own tokened text.

    For each receiving environment: a ``lost`` row if it could not be read; a ``cross``
    row from every other environment whose token was found in what it holds; ``lost``
    (`BLIND`) from every other one if none of its own tokens was read back; otherwise
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
        held = hits_by_env.get(d.env, [])
        found_from = {h.env for h in held} - {d.env}
        # A readback that lacks every token this environment was given did not see its
        # own signal: it cannot show that nothing else arrived either.
        own = {str(h.token) for h in scan_text(d.expected)}
        blind = bool(own) and not own & {str(h.token) for h in held}
        for src in envs:
            if src == d.env:
                continue
            if blind and src not in found_from:
                rows.append(IsolationRow(test, trial, src, d.env, RowResult.LOST, window, BLIND))
            elif src in found_from:
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


# -- observation privacy: screens of idle environments and page colours -------------------

Rgb = tuple[int, int, int]


def parse_rgb(hex_colour: str) -> Rgb:
    """``rrggbb`` as an ``(r, g, b)`` triple."""
    if len(hex_colour) != 6:
        raise ValueError(f"a colour is six hex digits, got {hex_colour!r}")
    value = int(hex_colour, 16)
    return (value >> 16) & 0xFF, (value >> 8) & 0xFF, value & 0xFF


def colour_counts(rgb: bytes, width: int, height: int, colours: Iterable[Rgb]) -> dict[Rgb, int]:
    """How many pixels of a raw RGB screen are exactly each of ``colours``."""
    from PIL import Image  # only the screen checks need it

    wanted = set(colours)
    counts = dict.fromkeys(wanted, 0)
    found = Image.frombytes("RGB", (width, height), rgb).getcolors(width * height) or []
    for n, colour in found:
        if colour in wanted:
            counts[colour] = n
    return counts


def below_line_digest(rgb: bytes, width: int, line_px: int) -> str:
    """A digest of the screen below row ``line_px`` (the strip above may change by itself)."""
    return hashlib.sha256(rgb[line_px * width * 3 :]).hexdigest()


@dataclass(frozen=True)
class ScreenSample:
    """One screenshot of one environment, reduced to what observation privacy compares.

    ``colours`` counts the pixels of every environment's page colour, by environment.
    None for ``below_line`` means the screenshot could not be taken.
    """

    env: str
    at: float
    below_line: str | None
    colours: dict[str, int] = field(default_factory=dict)


def observation_rows(
    test: str,
    trial: int,
    window: int,
    samples: Sequence[ScreenSample],
    actors: Iterable[str],
    idle: Iterable[str],
    observed: Iterable[str],
    min_pixels: int,
) -> list[IsolationRow]:
    """Rows for one observation-privacy trial, one per (page owner, observed screen).

    A screen holding at least ``min_pixels`` of another environment's page colour is
    ``cross`` from that environment. An idle screen that changed below the clock line is
    ``cross`` from every actor: the change cannot be traced to one of them, so each is
    named. With no such evidence, a screen that was never read, an owner's screen that
    never showed its own page, or (for an idle screen) a trial in which no actor's screen
    changed below the clock line is ``lost``: the check could not see what it looks for
    (screenshots that never show the actors' own changes could not show a leaked one).
    """
    actors, idle = sorted(set(actors)), sorted(set(idle))
    owners = sorted(set(actors) | set(idle))
    by_env: dict[str, list[ScreenSample]] = {}
    for s in samples:
        by_env.setdefault(s.env, []).append(s)
    acting_changed = any(
        len({s.below_line for s in by_env.get(a, []) if s.below_line is not None}) > 1
        for a in actors
    )
    rows = []
    for dst in sorted(set(observed)):
        mine = sorted((s for s in by_env.get(dst, []) if s.below_line is not None), key=_at)
        changed_at = None
        if dst in idle and mine:
            first = mine[0].below_line
            changed_at = next((s.at - mine[0].at for s in mine if s.below_line != first), None)
        own_page_seen = dst not in owners or any(s.colours.get(dst, 0) >= min_pixels for s in mine)
        for src in owners:
            if src == dst:
                continue
            seen = [s for s in mine if s.colours.get(src, 0) >= min_pixels]
            reasons = []
            if seen:
                most = max(s.colours[src] for s in seen)
                reasons.append(f"{src}'s page colour on {dst}'s screen ({most} px)")
            if changed_at is not None and src in actors:
                reasons.append(
                    f"idle {dst}'s screen changed below the clock line {changed_at:.1f} s "
                    "into the trial while only the actors acted (every actor is named)"
                )
            if reasons:
                result, detail = RowResult.CROSS, "; ".join(reasons)
            elif not mine:
                result, detail = RowResult.LOST, f"no screenshot of {dst} could be taken"
            elif not own_page_seen:
                result, detail = RowResult.LOST, f"{dst}'s own page never showed on its screen"
            elif dst in idle and actors and not acting_changed:
                result, detail = (
                    RowResult.LOST,
                    "no acting screen changed below the clock line while the actors acted",
                )
            else:
                result, detail = RowResult.CLEAN, ""
            rows.append(IsolationRow(test, trial, src, dst, result, window, detail))
    return rows


def _at(s: ScreenSample) -> float:
    return s.at


# -- generations: stale actions, leftovers of a reset ----------------------------------------


class LoggedAction(Protocol):
    """What the detectors read of one action-log record."""

    @property
    def at(self) -> float: ...
    @property
    def env(self) -> str: ...
    @property
    def generation(self) -> int: ...
    @property
    def kind(self) -> str: ...
    @property
    def outcome(self) -> str: ...


def applied_stale_actions(
    records: Iterable[LoggedAction], env: str, generation: int, kind: str, left_at: float
) -> list[LoggedAction]:
    """Actions of ``kind`` aimed at ``generation`` of ``env`` and applied once the
    environment had left that generation (at or after ``left_at``)."""
    return [
        r
        for r in records
        if r.env == env
        and r.generation == generation
        and r.kind == kind
        and r.outcome == "applied"
        and r.at >= left_at
    ]


def stale_generation_row(
    test: str,
    trial: int,
    window: int,
    env: str,
    fired: int,
    refused: int,
    records: Sequence[LoggedAction],
    generation: int,
    kind: str,
    left_at: float,
) -> IsolationRow:
    """The row of one stale-generation trial on ``env``: from its old generation to its
    new one, so both ends name ``env``.

    ``fired`` old-generation actions were sent and ``refused`` of them were refused to the
    caller; ``records`` are the action log's records since the trial began. Any action
    applied (by the log, or because the caller was not refused) is ``cross``; a log that
    does not show every fired action is ``lost``.
    """
    applied = applied_stale_actions(records, env, generation, kind, left_at)
    logged = [r for r in records if r.env == env and r.generation == generation and r.kind == kind]
    if applied or refused < fired:
        detail = (
            f"{len(applied)} {kind}(s) of generation {generation} applied by the log, "
            f"{fired - refused} of {fired} not refused to the caller "
            "(from the old generation to the new one of the same environment)"
        )
        return IsolationRow(test, trial, env, env, RowResult.CROSS, window, detail)
    if len(logged) < fired:
        detail = f"the action log shows {len(logged)} of the {fired} stale {kind}s fired"
        return IsolationRow(test, trial, env, env, RowResult.LOST, window, detail)
    return IsolationRow(test, trial, env, env, RowResult.CLEAN, window)


def leftover_rows(
    test: str,
    trial: int,
    window: int,
    reset_env: str,
    tokens: Iterable[str],
    hits_by_env: dict[str, list[TokenHit] | str],
) -> list[IsolationRow]:
    """Rows for what an environment's old generation left behind after a reset.

    ``tokens`` are what the old generation typed or set; ``hits_by_env`` holds the tokens
    found in each environment's tree and clipboard after the reset, or why they could not
    be read (that environment's row is lost, with the reason).
    Found in ``reset_env`` itself, they crossed from its old generation to its new one, so
    that row names ``reset_env`` at both ends; found in another environment, they crossed
    to it.
    """
    wanted = set(tokens)
    rows = []
    for dst, hits in sorted(hits_by_env.items()):
        if isinstance(hits, str):
            detail = f"{dst}'s tree or clipboard could not be read: {hits}"[:500]
            rows.append(IsolationRow(test, trial, reset_env, dst, RowResult.LOST, window, detail))
            continue
        found = sorted({str(h.token) for h in hits if str(h.token) in wanted})
        if not found:
            rows.append(IsolationRow(test, trial, reset_env, dst, RowResult.CLEAN, window))
            continue
        where = sorted({h.source for h in hits if str(h.token) in wanted})
        if dst == reset_env:
            what = "the old generation's tokens survived into the new generation"
        else:
            what = f"{reset_env}'s old-generation tokens reached {dst}"
        detail = f"{what}: {len(found)} token(s) in {', '.join(where)[:300]}"
        rows.append(IsolationRow(test, trial, reset_env, dst, RowResult.CROSS, window, detail))
    return rows


# -- crash blast radius --------------------------------------------------------------------


@dataclass(frozen=True)
class Bystander:
    """What was seen of one environment while another one crashed and came back."""

    env: str
    pids_before: tuple[int, ...]
    pids_after: tuple[int, ...]
    dead_after: tuple[str, ...]  # programs (or the display, the bus) not alive afterwards
    generation_before: int
    generation_after: int
    latencies_ms: tuple[float, ...]  # screenshots timed while the target was down
    failed_screenshots: int = 0
    # The canary watcher's own looks (focused text, windows, clipboard) timed meanwhile:
    # only the canary has them, and a look that failed or was slow is one it missed.
    looks_ms: tuple[float, ...] = ()
    failed_looks: int = 0


def _harm_to(
    b: Bystander, latency_bound_ms: float, look_bound_ms: float | None = None
) -> list[str]:
    """What was done to a bystander: programs gone, a new generation, failed or slow
    screenshots, and (with ``look_bound_ms``) the canary's failed or slow looks."""
    harm = _looks_missed(b, look_bound_ms) if look_bound_ms is not None else []
    if b.pids_after != b.pids_before or b.dead_after:
        harm.append(f"programs changed or died ({', '.join(b.dead_after) or 'new pids'})")
    if b.generation_after != b.generation_before:
        harm.append(f"generation {b.generation_before} -> {b.generation_after}")
    if b.failed_screenshots:
        harm.append(f"{b.failed_screenshots} screenshot(s) failed")
    slow = [ms for ms in b.latencies_ms if ms > latency_bound_ms]
    if slow:
        over = f"{len(slow)} screenshot(s) over {latency_bound_ms:.0f} ms"
        harm.append(f"{over} (max {max(slow):.0f} ms)")
    return harm


def _looks_missed(b: Bystander, look_bound_ms: float) -> list[str]:
    harm = []
    if b.failed_looks:
        harm.append(f"{b.failed_looks} canary look(s) failed")
    slow = [ms for ms in b.looks_ms if ms > look_bound_ms]
    if slow:
        harm.append(
            f"{len(slow)} canary look(s) over {look_bound_ms:.0f} ms (max {max(slow):.0f} ms)"
        )
    return harm


def blast_radius_rows(
    test: str,
    trial: int,
    window: int,
    target: str,
    bystanders: Sequence[Bystander],
    latency_bound_ms: float,
    came_back: bool,
    why_not_back: str = "",
) -> list[IsolationRow]:
    """Rows from a crashed environment to every bystander.

    A bystander whose programs were replaced or died, whose generation changed, whose
    screenshots failed, or whose screenshot took longer than ``latency_bound_ms`` while
    the target was down is ``cross``. A target that did not come back makes every row
    that shows no harm ``lost``: the check did not reach its end.
    """
    rows = []
    for b in bystanders:
        harm = _harm_to(b, latency_bound_ms)
        if harm:
            result, detail = RowResult.CROSS, "; ".join(harm)
        elif not came_back:
            result, detail = RowResult.LOST, f"{target} did not come back: {why_not_back}"
        elif not b.latencies_ms:
            result, detail = RowResult.LOST, f"{b.env} was never timed while {target} was down"
        else:
            result, detail = RowResult.CLEAN, ""
        rows.append(IsolationRow(test, trial, target, b.env, result, window, detail[:500]))
    return rows


# -- modifier_leak and dialog_steal --------------------------------------------------------

_SHIFTED = dict(zip("`1234567890-=[]\\;',./", '~!@#$%^&*()_+{}|:"<>?', strict=True))


def shifted(text: str) -> str:
    """What ``text`` becomes when typed on a US keyboard with Shift held down."""
    return "".join(_SHIFTED.get(ch, ch.upper()) for ch in text)


class ModifierEffect(StrEnum):
    """What a held modifier did to a lowercase word typed elsewhere."""

    EXACT = "exact"  # the word arrived as typed
    SHIFTED = "shifted"  # it arrived in capitals: Shift leaked
    MISSING = "missing"  # no trace of it: Ctrl (shortcuts instead of text) or lost input
    PARTIAL = "partial"  # some of it arrived, some in capitals or not at all


def modifier_effect(typed: str, observed: str) -> ModifierEffect:
    """How ``typed`` (lowercase) shows up in ``observed``, the text that should hold it."""
    if not typed or typed != typed.lower():
        raise ValueError("the typed word must be non-empty lowercase")
    if typed in observed:
        return ModifierEffect.EXACT
    caps = shifted(typed)
    if caps != typed and caps in observed:
        return ModifierEffect.SHIFTED
    # Shift held for only part of the word leaves a mix of cases: compare case-blind.
    if typed in observed.lower() or _longest_shared_run(typed, observed.lower()) >= 4:
        return ModifierEffect.PARTIAL
    return ModifierEffect.MISSING


def _longest_shared_run(a: str, b: str) -> int:
    best = 0
    for i in range(len(a)):
        for j in range(i + best + 1, len(a) + 1):
            if a[i:j] in b:
                best = j - i
            else:
                break
    return best


def typed_fragment(baseline: str, observed: str, typed: str, min_len: int = 4) -> str | None:
    """The longest run of ``typed`` (at least ``min_len`` characters) that ``observed``
    holds and ``baseline`` did not: someone's typing reached a field it was not aimed at.

    None when the field holds no such run (unchanged, or changed by something else).
    """
    best: str | None = None
    for i in range(len(typed)):
        for j in range(len(typed), i + min_len - 1, -1):
            piece = typed[i:j]
            if best is not None and len(piece) <= len(best):
                break
            if piece in observed and piece not in baseline:
                best = piece
                break
    return best


@dataclass(frozen=True)
class DialogSighting:
    """One Save As dialog seen during a dialog_steal trial.

    ``seen_in`` is the environment whose view showed it (``via`` its display or its
    AT-SPI tree); ``owner`` is the environment whose program owns the dialog (its process
    descends from that environment's program), None when that could not be told.
    """

    seen_in: str
    via: str  # "display" | "atspi"
    owner: str | None


def dialog_rows(
    test: str,
    trial: int,
    window: int,
    opener: str,
    others: Iterable[str],
    sightings: Sequence[DialogSighting],
) -> list[IsolationRow]:
    """Rows from the environment that pressed Save As to every other one.

    The dialog belongs in the opener's own program and its own views. ``cross`` to an
    environment whose program opened it (input aimed at the opener acted there), or whose
    view shows a dialog owned by another environment. Without such evidence, a dialog
    seen nowhere, one the other environment shows with an owner that could not be told,
    or one never seen as the opener's own in the opener's view is ``lost``.
    """
    own_seen = any(s.owner == opener and s.seen_in == opener for s in sightings)
    named = {s.owner for s in sightings if s.owner} | {s.seen_in for s in sightings}
    rows = []
    for dst in sorted((set(others) | named) - {opener}):
        reasons = []
        vias = sorted({f"{s.seen_in}'s {s.via}" for s in sightings if s.owner == dst})
        if vias:
            reasons.append(
                f"{opener}'s Save As opened in {dst}'s program (seen on {', '.join(vias)})"
            )
        foreign = sorted(
            {
                (s.via, str(s.owner))
                for s in sightings
                if s.seen_in == dst and s.owner not in (None, dst)
            }
        )
        reasons.extend(f"{dst}'s {via} shows {owner}'s Save As dialog" for via, owner in foreign)
        if reasons:
            result, detail = RowResult.CROSS, "; ".join(reasons)
        elif not sightings:
            result, detail = RowResult.LOST, f"{opener}'s Save As appeared nowhere"
        elif any(s.seen_in == dst and s.owner is None for s in sightings):
            result, detail = RowResult.LOST, f"{dst} shows a Save As dialog of unknown owner"
        elif not own_seen:
            result, detail = RowResult.LOST, f"{opener} never showed its own Save As dialog"
        else:
            result, detail = RowResult.CLEAN, ""
        rows.append(IsolationRow(test, trial, opener, dst, result, window, detail[:500]))
    return rows


def dialog_typing_row(
    test: str,
    trial: int,
    window: int,
    typist: str,
    opener: str,
    typed: str,
    token: str,
    fields: tuple[str | None, str | None],
    trees: tuple[str | None, str | None],
    typist_tree: str | None,
) -> IsolationRow:
    """The row from the typist to the opener: did the typing reach the opener?

    ``fields`` are the opener's own Save As file-name field at the baseline and while the
    typist typed; ``trees`` all the text of the opener's AT-SPI tree at the same two
    moments, ``typist_tree`` all the text of the typist's own tree after it typed (None:
    unreadable). A run of ``typed`` new in the field, or the typist's ``token`` new
    anywhere in the opener's tree, is ``cross``. With no such evidence, a field that could
    not be read, or typing that never showed in the typist's own tree (keys that land
    nowhere cannot land in the wrong place either), is ``lost``.
    """
    (field_before, field_during), (tree_before, tree_during) = fields, trees
    fragment = None
    if field_before is not None and field_during is not None:
        fragment = typed_fragment(field_before, field_during, typed)
    if fragment is not None:
        detail = f"{opener}'s Save As field took {fragment!r} typed in {typist}"
        return IsolationRow(test, trial, typist, opener, RowResult.CROSS, window, detail)
    if tree_during is not None and token in tree_during and token not in (tree_before or ""):
        detail = f"{opener}'s accessibility tree shows the text {typist} typed ({token})"
        return IsolationRow(test, trial, typist, opener, RowResult.CROSS, window, detail)
    if field_before is None or field_during is None:
        detail = f"{opener}'s own Save As field could not be read"
        return IsolationRow(test, trial, typist, opener, RowResult.LOST, window, detail)
    if typist_tree is None or token not in typist_tree:
        detail = f"{typist}'s own typing ({token}) never showed in its own accessibility tree"
        return IsolationRow(test, trial, typist, opener, RowResult.LOST, window, detail)
    return IsolationRow(test, trial, typist, opener, RowResult.CLEAN, window)


def _without_own(observed: str, own: str) -> str:
    """What is left of ``observed`` after taking out ``own`` as an in-order subsequence."""
    left = []
    i = 0
    for ch in observed:
        if i < len(own) and ch == own[i]:
            i += 1
        else:
            left.append(ch)
    return "".join(left)


def _lcs_len(a: str, b: str) -> int:
    prev = [0] * (len(b) + 1)
    for ca in a:
        cur = [0]
        for j, cb in enumerate(b):
            cur.append(prev[j] + 1 if ca == cb else max(prev[j + 1], cur[j]))
        prev = cur
    return prev[-1]


def interleaved_senders(
    observed: str, own_typed: str, others_typed: dict[str, str], min_chars: int = 8
) -> list[str]:
    """Senders whose keystrokes are mixed into a document that should hold only
    ``own_typed``, even when the mixing broke every token apart.

    Whitespace is ignored. What remains after taking out our own text in order must be
    at least ``min_chars`` long and mostly (80 %) an in-order piece of a sender's text.
    """
    squash = "".join
    left = _without_own(squash(observed.split()), squash(own_typed.split()))
    if len(left) < min_chars:
        return []
    out = []
    for env, text in sorted(others_typed.items()):
        if _lcs_len(left, squash(text.split())) >= 0.8 * len(left):
            out.append(env)
    return out


# -- noisy_neighbor ------------------------------------------------------------------------


@dataclass(frozen=True)
class HogBounds:
    """What the hog's environment may take: MiB of memory, tasks, MiB of its /tmp and of
    its home."""

    memory_mib: int
    tasks: int
    tmp_mib: int
    home_mib: int


@dataclass(frozen=True)
class HogReport:
    """What the hog held at most (None fields: it never said)."""

    memory_mib: int | None = None
    tasks: int | None = None
    tmp_mib: int | None = None
    home_mib: int | None = None
    error: str | None = None

    @classmethod
    def from_probe(cls, data: Mapping[str, object]) -> HogReport:
        def value(key: str) -> int | None:
            v = data.get(key)
            return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None

        got = cls(value("memory_mib"), value("tasks"), value("tmp_mib"), value("home_mib"))
        if None in (got.memory_mib, got.tasks, got.tmp_mib, got.home_mib):
            return cls(error=f"the hog's report is incomplete: {dict(data)!r:.200}")
        return got

    def beyond(self, bounds: HogBounds) -> list[str]:
        """What the hog took past its environment's limits."""
        pairs = (
            ("memory", self.memory_mib, bounds.memory_mib, "MiB"),
            ("tasks", self.tasks, bounds.tasks, ""),
            ("/tmp", self.tmp_mib, bounds.tmp_mib, "MiB"),
            ("home", self.home_mib, bounds.home_mib, "MiB"),
        )
        return [
            f"{what} {got}{unit and ' ' + unit} > {bound}{unit and ' ' + unit}"
            for what, got, bound, unit in pairs
            if got is not None and got > bound
        ]


def noisy_neighbor_rows(
    test: str,
    trial: int,
    window: int,
    hog_env: str,
    hog: HogReport,
    bounds: HogBounds,
    bystanders: Sequence[Bystander],
    latency_bound_ms: float,
    look_bound_ms: float,
    canary: str,
) -> list[IsolationRow]:
    """Rows from the hogging environment to every bystander.

    ``cross`` when the hog took more than its environment's limits (what it took past
    them was taken from the machine everyone shares), or when a bystander was harmed
    while it ran: its programs died or were replaced, its generation changed, a
    screenshot of it failed or took longer than ``latency_bound_ms``, or (the
    ``canary``) one of the watcher's looks failed or took longer than ``look_bound_ms``.
    ``lost`` when the hog never said what it held, or a bystander was never timed while
    it ran (the canary: never looked at).
    """
    excess = [] if hog.error else hog.beyond(bounds)
    rows = []
    for b in bystanders:
        is_canary = b.env == canary
        harm = [f"{hog_env} took {', '.join(excess)}"] if excess else []
        harm += _harm_to(b, latency_bound_ms, look_bound_ms if is_canary else None)
        if harm:
            result, detail = RowResult.CROSS, "; ".join(harm)
        elif hog.error:
            result, detail = RowResult.LOST, f"{hog_env}'s hog: {hog.error}"
        elif not b.latencies_ms or (is_canary and not b.looks_ms):
            result, detail = RowResult.LOST, f"{b.env} was never timed while {hog_env} hogged"
        else:
            result, detail = RowResult.CLEAN, ""
        rows.append(IsolationRow(test, trial, hog_env, b.env, result, window, detail[:500]))
    return rows
