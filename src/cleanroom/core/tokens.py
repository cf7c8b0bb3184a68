"""Rollout ids and tokens: every string a policy types names the environment it came from.

A rollout id is ``<env>-w<window>-r<seq>`` (``env03-w001-r0007``) and a token is the
rollout id followed by eight random lowercase hex digits (``env03-w001-r0007-9f8e7d6c``).
Tokens use only ``[a-z0-9-]`` so they survive XTest typing, shells, file names, form
fields and URL encoding unchanged, and the environment is part of the token itself, so
a token found anywhere (a document, a clipboard, a form row, a log line) is attributed
without a lookup.
"""

from __future__ import annotations

import os
import re
import secrets
import threading
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

ENV_PATTERN = r"env\d{2,3}"
ROLLOUT_PATTERN = rf"(?P<env>{ENV_PATTERN})-w(?P<window>\d{{3,6}})-r(?P<seq>\d{{4,8}})"
TOKEN_PATTERN = rf"(?P<rollout>{ROLLOUT_PATTERN})-(?P<nonce>[0-9a-f]{{8}})"

_ENV_RE = re.compile(rf"{ENV_PATTERN}\Z")
_ROLLOUT_RE = re.compile(rf"{ROLLOUT_PATTERN}\Z")
_TOKEN_RE = re.compile(rf"{TOKEN_PATTERN}\Z")
# A token embedded in other text must not be glued to a longer word on either side. The
# left side is checked in Python (see `_glued`): a look-behind at the start of the pattern
# would cost the regex engine its literal-prefix search, which is most of its speed.
_SCAN_RE = re.compile(rf"{TOKEN_PATTERN}(?![0-9a-f])".encode())
_WORD_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789")
# Hyperscan's form of the same pattern (no look-around): it only proposes where a token
# starts; every proposal is confirmed by `_SCAN_RE`, so both engines give the same answer.
_HS_PATTERN = rb"env[0-9]{2,3}-w[0-9]{3,6}-r[0-9]{4,8}-[0-9a-f]{8}"

Buffer = bytes | bytearray | memoryview

TOKEN_MAX_LEN = len("env000-w000000-r00000000-00000000")


class TokenError(ValueError):
    """A string that should be a rollout id, environment name or token is not one."""


@dataclass(frozen=True, order=True)
class RolloutId:
    """The identity of one rollout: which environment, which window, which attempt."""

    env: str
    window: int
    seq: int

    def __post_init__(self) -> None:
        if not _ENV_RE.match(self.env):
            raise TokenError(f"environment name must look like env01, got {self.env!r}")
        if not (0 <= self.window < 10**6 and 0 <= self.seq < 10**8):
            raise TokenError(f"window or sequence out of range: {self.window}, {self.seq}")

    def __str__(self) -> str:
        return f"{self.env}-w{self.window:03d}-r{self.seq:04d}"

    @classmethod
    def parse(cls, text: str) -> RolloutId:
        """Parse ``env03-w001-r0007``; raise `TokenError` on anything else."""
        m = _ROLLOUT_RE.match(text)
        if not m:
            raise TokenError(f"not a rollout id (want env03-w001-r0007): {text!r}")
        return cls(m["env"], int(m["window"]), int(m["seq"]))


@dataclass(frozen=True, order=True)
class Token:
    """A rollout's token: its rollout id plus eight random hex digits."""

    rollout: RolloutId
    nonce: str

    def __str__(self) -> str:
        return f"{self.rollout}-{self.nonce}"

    @property
    def env(self) -> str:
        return self.rollout.env

    @property
    def rollout_id(self) -> str:
        return str(self.rollout)


@dataclass(frozen=True)
class TokenHit:
    """One token found somewhere, with where it was found."""

    token: Token
    source: str
    offset: int
    # The layers it was found under, for people ("gzip > zip:content.xml"); "" when it
    # was found as the harness writes it.
    form: str = ""

    @property
    def env(self) -> str:
        return self.token.env

    @property
    def rollout_id(self) -> str:
        return self.token.rollout_id


def mint(rollout_id: RolloutId | str) -> Token:
    """Return a fresh token for a rollout: ``<rollout_id>-<8 lowercase hex>`` from `secrets`."""
    rid = rollout_id if isinstance(rollout_id, RolloutId) else RolloutId.parse(rollout_id)
    return Token(rid, secrets.token_hex(4))


def parse(text: str) -> Token:
    """Parse a whole string as a token; raise `TokenError` if it is not exactly one."""
    m = _TOKEN_RE.match(text)
    if not m:
        raise TokenError(f"not a token (want env03-w001-r0007-9f8e7d6c): {text!r}")
    rid = RolloutId(m["env"], int(m["window"]), int(m["seq"]))
    return Token(rid, m["nonce"])


def env_of(text: str) -> str | None:
    """The environment a token names, or None if the text is not a token."""
    m = _TOKEN_RE.match(text)
    return m["env"] if m else None


def _hit(m: re.Match[bytes], source: str, base: int) -> TokenHit:
    rid = RolloutId(m["env"].decode(), int(m["window"]), int(m["seq"]))
    return TokenHit(Token(rid, m["nonce"].decode()), source, base + m.start())


def _glued(buf: Buffer, start: int, lo: int = 0) -> bool:
    """A token starting at ``start`` is glued to a word before it (``lo`` is where the
    text starts in ``buf``: nothing before it is the token's neighbour)."""
    return start > lo and buf[start - 1] in _WORD_BYTES


TOKEN_MIN_LEN = len("env00-w000-r0000-00000000")


def _ending_at(buf: Buffer, end: int, lo: int, hi: int, text_lo: int) -> re.Match[bytes] | None:
    """The confirmed token that ends at ``end``, starting at or after ``lo``, in the text
    ``buf[text_lo:hi]``; None if the candidate is not one.

    A token is at most `TOKEN_MAX_LEN` bytes, so its start lies in a short window before
    its end. Tokens never overlap (a token's last byte is hex, and the next byte after a
    token is not), so the window's matches are disjoint and the one that ends at ``end``
    is found by walking them.
    """
    for m in _SCAN_RE.finditer(buf, max(lo, end - TOKEN_MAX_LEN), min(end + 1, hi)):
        if m.end() == end:
            return None if _glued(buf, m.start(), text_lo) else m
        if m.end() > end:
            break
    return None


class _Hyperscan:
    """Candidate token ends from Hyperscan (about 10 GB/s), one database and scratch per
    thread. The database tracks no start of match: Hyperscan is about a third faster
    without it, and `_ending_at` finds the start in the few bytes before the end."""

    def __init__(self) -> None:
        import hyperscan

        self._hs = hyperscan
        self._local = threading.local()

    def _db(self) -> Any:
        db = getattr(self._local, "db", None)
        if db is None:
            db = self._hs.Database()
            db.compile(expressions=[_HS_PATTERN], ids=[0], flags=[0])
            self._local.db = db
        return db

    def ends(self, buf: Buffer, pos: int, endpos: int) -> list[int]:
        """Where a candidate ends in ``buf[pos:endpos]``, as offsets into ``buf``."""
        found: list[int] = []

        def on_match(_id: int, _start: int, end: int, _flags: int, _ctx: object) -> None:
            found.append(pos + end)

        self._db().scan(memoryview(buf)[pos:endpos], match_event_handler=on_match)
        return found


def _load_engine() -> _Hyperscan | None:
    if os.environ.get("CLEANROOM_TOKEN_ENGINE", "") == "re":
        return None
    try:
        return _Hyperscan()
    except ImportError:  # a platform without Hyperscan wheels: the re engine alone is correct
        return None


_ENGINE = _load_engine()
# Below this many bytes the plain regex is faster: a Hyperscan call costs a few
# microseconds before it reads a byte, which on a form submission is most of the scan.
_HS_MIN_BYTES = 4096


def hits_in(buf: Buffer, source: str, base: int = 0, pos: int = 0) -> Iterator[TokenHit]:
    """Every token in ``buf`` that starts at or after ``pos``, in order, found as
    `scan_spans` finds them; an offset is ``base`` plus the token's place in ``buf`` (a
    buffer that holds a file's bytes from offset ``base`` on)."""
    for m in _matches(buf, pos):
        yield _hit(m, source, base)


def _matches(buf: Buffer, pos: int = 0) -> Iterator[re.Match[bytes]]:
    """Confirmed token matches in ``buf`` starting at or after ``pos``, in order; the
    bytes before ``pos`` are context (a token right after a word is glued to it)."""
    if _ENGINE is None or len(buf) - pos < _HS_MIN_BYTES:
        for m in _SCAN_RE.finditer(buf, pos):
            if not _glued(buf, m.start()):
                yield m
        return
    for end in _ENGINE.ends(buf, pos, len(buf)):
        confirmed = _ending_at(buf, end, pos, len(buf), 0)
        if confirmed is not None:
            yield confirmed


def scan_spans(buf: Buffer, spans: list[tuple[str, int, int]]) -> list[TokenHit]:
    """Every token in several texts laid end to end in one buffer: ``spans`` names each
    text as ``(source, start, stop)`` in ``buf``, in order and without gaps or overlaps.

    One matcher call covers them all, which is what makes a tree of small files fast; a
    candidate that runs across two texts is no token of either. Offsets are within each
    text, as if it had been scanned alone.
    """
    if not spans:
        return []
    if _ENGINE is None:
        return [
            _hit(m, source, -lo)
            for source, lo, hi in spans
            for m in _SCAN_RE.finditer(buf, lo, hi)
            if not _glued(buf, m.start(), lo)
        ]
    starts = [lo for _, lo, _ in spans]
    hits: list[TokenHit] = []
    for end in _ENGINE.ends(buf, spans[0][1], spans[-1][2]):
        source, lo, hi = spans[bisect_right(starts, end - 1) - 1]
        m = _ending_at(buf, end, lo, hi, lo)
        if m is not None:
            hits.append(_hit(m, source, -lo))
    return hits


def scan_bytes(data: Buffer, source: str = "<bytes>") -> list[TokenHit]:
    """Every token in a byte string, in order of appearance."""
    return [_hit(m, source, 0) for m in _matches(data)]


def found_tokens(data: Buffer) -> list[tuple[str, str]]:
    """Every token in a byte string as ``(token, environment)`` text, in order of appearance:
    what `scan_bytes` finds, without building a `TokenHit` for each (the form's hot path)."""
    return [(m[0].decode(), m["env"].decode()) for m in _matches(data)]


def scan_text(text: str, source: str = "<text>") -> list[TokenHit]:
    """Every token in a text string (offsets are in UTF-8 bytes)."""
    return scan_bytes(text.encode("utf-8", "surrogatepass"), source)
