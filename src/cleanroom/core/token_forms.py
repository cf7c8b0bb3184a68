"""Every form a token can take in bytes, found under a stated cost.

The strict scanner (`core.tokens`) finds a token as the harness wrote it. An agent that
wants a leaked token to pass unseen, or a program that stores text its own way, can
change its form: upper case, a letter glued in front, UTF-16, base64, hex, URL or
quoted-printable escapes, markup between its characters, a gzip stream, a zip member
(ODT, DOCX and XLSX are zip files). `find_forms` finds a token in any of those forms, one
inside another, and names the layers it took off (``gzip > zip:content.xml > markup``).

The matcher has two kinds of step, so a new encoding is one entry in a table:

- *forms seen in place* (`_DIRECT`): a token written with another character width or
  case, matched by a pattern on the bytes as they are (ASCII in any case and with any
  neighbours, UTF-16 little- and big-endian);
- *decoders* (`_DECODERS`): each finds the spans its encoding could hold (a run of base64
  characters, a gzip header, a zip member) or, for an escape syntax, rewrites the whole
  buffer, and hands the bytes it decoded to the same matcher one layer deeper.

Its cost is bounded, and what a bound left unread is reported (`Unread`), never skipped
in silence: every decoded byte is charged to a budget the caller gives (so a zip bomb
costs at most the budget), the layers nest at most `MAX_DEPTH` deep, and a deadline stops
the decoding. Pure: bytes in, records out (the clock is the caller's).
"""

from __future__ import annotations

import binascii
import bz2
import lzma
import re
import struct
import threading
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any
from urllib.parse import unquote_to_bytes

from cleanroom.core.tokens import RolloutId, Token, TokenError

# How deep the layers nest: a base64 string in a zip member's XML inside a gzip stream is
# three layers.
MAX_DEPTH = 4
# The fewest characters of a base64 run that can hold a whole token at any alignment (a
# token is at least 25 bytes, 36 base64 characters with a partial group at each end).
_B64_MIN = 32
_HEX_MIN = 50  # two hex digits per byte of the shortest token
_STREAM_CHUNK = 64 << 10  # input fed to a decompressor at a time


class Encoding(StrEnum):
    """One layer a token can be wrapped in."""

    CASE = "any case"  # ASCII, upper or mixed case, glued to its neighbours
    UTF16LE = "utf-16le"
    UTF16BE = "utf-16be"
    BASE64 = "base64"
    HEX = "hex"
    PERCENT = "url-encoding"
    QUOTED_PRINTABLE = "quoted-printable"
    ENTITIES = "character references"
    BACKSLASH = "backslash escapes"
    MARKUP = "markup"
    GZIP = "gzip"
    ZIP = "zip"
    BZIP2 = "bzip2"
    XZ = "xz"


class Bound(StrEnum):
    """Why something was not read: the cost bound it hit."""

    FILE_BYTES = "per-file budget of decoded bytes"
    ENV_BYTES = "per-environment budget of decoded bytes"
    DEPTH = "nesting depth"
    DEADLINE = "deadline"
    INPUT = "input size"
    UNSUPPORTED = "unsupported encoding"


@dataclass(frozen=True)
class Layer:
    """One layer taken off: its encoding, where it started in the bytes around it, and
    a name where it has one (a zip member's)."""

    encoding: Encoding
    at: int
    name: str = ""
    # Escape syntaxes decoded in the same pass (`_escapes` takes every one it sees).
    also: tuple[Encoding, ...] = ()

    @property
    def encodings(self) -> tuple[Encoding, ...]:
        return (self.encoding, *self.also)

    def __str__(self) -> str:
        text = "+".join(map(str, self.encodings))
        return f"{text}:{self.name}" if self.name else text


@dataclass(frozen=True)
class FormHit:
    """A token found in some form: the layers around it, outermost first (none: it was
    plain), and its offset in the innermost layer's bytes."""

    token: Token
    layers: tuple[Layer, ...]
    offset: int

    @property
    def outer_offset(self) -> int:
        """Where it is in the bytes scanned: the outermost layer's start, or the token's."""
        return self.layers[0].at if self.layers else self.offset

    @property
    def form(self) -> str:
        """The layers, for people: ``gzip > zip:content.xml > markup``."""
        return " > ".join(map(str, self.layers))


@dataclass(frozen=True)
class Unread:
    """Bytes a bound kept the matcher from decoding: where (the layers down to them) and
    which bound."""

    layers: tuple[Layer, ...]
    bound: Bound
    detail: str

    @property
    def form(self) -> str:
        return " > ".join(map(str, self.layers))


@dataclass
class Forms:
    """What `find_forms` found, what it could not read, and how many bytes it decoded."""

    hits: list[FormHit] = field(default_factory=list)
    unread: list[Unread] = field(default_factory=list)
    decoded: int = 0


# -- forms seen in place ---------------------------------------------------------------

# A token's pattern, written for any character width: matched on a lower-cased copy of
# the bytes and without look-around, so a token glued to a word on either side is still a
# token (its nonce is the first eight hex digits after the last dash).


def _pattern(before: bytes, after: bytes) -> bytes:
    """The token's pattern with every character written as ``before + c + after`` (a NUL
    after each character is UTF-16LE, before each UTF-16BE)."""

    def lit(text: bytes) -> bytes:
        return b"".join(re.escape(before + bytes([c]) + after) for c in text)

    def rep(cls: bytes, lo: int, hi: int) -> bytes:
        return b"(?:%s%s%s){%d,%d}" % (re.escape(before), cls, re.escape(after), lo, hi)

    return (
        b"(?P<env>" + lit(b"env") + rep(b"[0-9]", 2, 3) + b")"
        + lit(b"-w") + b"(?P<window>" + rep(b"[0-9]", 3, 6) + b")"
        + lit(b"-r") + b"(?P<seq>" + rep(b"[0-9]", 4, 8) + b")"
        + lit(b"-") + b"(?P<nonce>" + rep(b"[0-9a-f]", 8, 8) + b")"
    )  # fmt: skip


_DIRECT: tuple[tuple[Encoding | None, re.Pattern[bytes], bytes], ...] = (
    (None, re.compile(_pattern(b"", b"")), b""),
    (Encoding.UTF16LE, re.compile(_pattern(b"", b"\x00")), b"\x00"),
    (Encoding.UTF16BE, re.compile(_pattern(b"\x00", b"")), b"\x00"),
)
# The same patterns without groups and with NUL written as an escape, for a prefilter
# (Hyperscan, caseless) that proposes which bytes are worth this module's time.
LOOSE_PATTERNS: tuple[bytes, ...] = tuple(
    re.sub(rb"\(\?P<[a-z]+>", b"(", p.pattern).replace(b"\x00", b"\\x00") for _, p, _ in _DIRECT
)


def _token(m: re.Match[bytes], pad: bytes) -> Token | None:
    def part(name: str) -> str:
        raw = m[name].replace(pad, b"") if pad else m[name]
        return raw.decode("ascii")

    try:
        rid = RolloutId(part("env"), int(part("window")), int(part("seq")))
    except TokenError:
        return None
    return Token(rid, part("nonce"))


def _direct(buf: bytes, layers: tuple[Layer, ...], out: Forms) -> None:
    low = buf.lower()  # ASCII only: offsets and every other byte stay as they are
    for encoding, pattern, pad in _DIRECT:
        for m in pattern.finditer(low):
            token = _token(m, pad)
            if token is None:
                continue
            here = layers
            if encoding is not None:
                here = (*layers, Layer(encoding, m.start()))
            elif buf[m.start() : m.end()] != m[0]:
                here = (*layers, Layer(Encoding.CASE, m.start()))
            out.hits.append(FormHit(token, here, m.start()))


# -- decoders --------------------------------------------------------------------------


@dataclass
class _Run:
    """One decoding under way: the budget left and the clock."""

    budget: int
    deadline: float | None
    clock: Callable[[], float]
    out: Forms
    bound: Bound = Bound.FILE_BYTES

    def past(self) -> bool:
        return self.deadline is not None and self.clock() > self.deadline

    def charge(self, n: int) -> None:
        self.budget -= n
        self.out.decoded += n


_Decoded = Iterator[tuple[Layer, bytes, bool]]  # layer, its bytes, whether cut by the budget


# Runs of base64 characters are found on a mask of the bytes (each byte of the alphabet,
# line breaks included, made ``a``, every other byte NUL) with `bytes.find`, which runs
# at memory speed where a character-class regex walks every byte.
_B64_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_-\r\n"
_B64_MASK = bytes(ord("a") if c in _B64_ALPHABET else 0 for c in range(256))
_URLSAFE = bytes.maketrans(b"-_", b"+/")


def _runs(buf: bytes, mask: bytes, least: int) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of every run of at least ``least`` bytes that ``mask`` maps to ``a``."""
    marked = buf.translate(mask)
    seed = b"a" * least
    pos = marked.find(seed)
    while pos >= 0:
        start = marked.rfind(b"\x00", 0, pos) + 1
        end = marked.find(b"\x00", pos)
        end = len(marked) if end < 0 else end
        yield start, end
        pos = marked.find(seed, end)


def _b64(text: bytes) -> bytes:
    """Base64 text decoded as far as it goes, a partial last group included."""
    rem = len(text) % 4
    text = text[:-1] if rem == 1 else text + b"=" * ((4 - rem) % 4)
    try:
        return binascii.a2b_base64(text)
    except binascii.Error:
        return b""


def _alphabet_runs(buf: bytes, run: _Run) -> _Decoded:
    """Base64 and hex: both are runs of base64 characters (hex digits are some), found
    in one pass."""
    for start, end in _runs(buf, _B64_MASK, _B64_MIN):
        raw = buf[start:end]
        text = raw.replace(b"\r", b"").replace(b"\n", b"")
        if len(text) >= _B64_MIN:
            if b"-" in text or b"_" in text:  # the URL-safe alphabet
                text = text.translate(_URLSAFE)
            for k in range(4):  # the token's bytes may sit at any alignment of the run
                room = max(0, run.budget) // 3 * 4
                part = text[k:]
                yield Layer(Encoding.BASE64, start + k), _b64(part[:room]), room < len(part)
        for lo, hi in _runs(raw, _HEX_MASK, _HEX_MIN):
            for k in range(2):
                part = raw[lo + k : hi]
                part = part[: len(part) // 2 * 2]
                room = max(0, run.budget) * 2
                cut = room < len(part)
                layer = Layer(Encoding.HEX, start + lo + k)
                yield layer, binascii.unhexlify(part[:room]), cut


_HEX_MASK = bytes(ord("a") if c in b"0123456789abcdefABCDEF" else 0 for c in range(256))


def _entities(buf: bytes) -> bytes:
    def one(m: re.Match[bytes]) -> bytes:
        body = m[1]
        n = int(body[1:], 16) if body[:1] in b"xX" else int(body)
        return bytes([n]) if n < 128 else m[0]

    return re.sub(rb"&#([xX][0-9a-fA-F]{1,6}|[0-9]{1,7});", one, buf)


def _backslashes(buf: bytes) -> bytes:
    def one(m: re.Match[bytes]) -> bytes:
        n = int(m[1] or m[2], 16)
        return bytes([n]) if n < 128 else m[0]

    return re.sub(rb"\\(?:x([0-9a-fA-F]{2})|u00([0-9a-fA-F]{2}))", one, buf)


def _stream(
    buf: bytes, start: int, run: _Run, make: Callable[[], object], limit: int | None = None
) -> tuple[bytes, bool, int]:
    """Decompress from ``start`` (at most ``limit`` input bytes) until the stream ends,
    fails or the budget is spent: ``(what came out, cut by the budget, input used)``.
    A stream that fails part way gives what it decoded before the failure."""
    d = make()
    end = len(buf) if limit is None else min(len(buf), start + limit)
    parts: list[bytes] = []
    pos, got = start, 0
    view = memoryview(buf)
    try:
        while pos < end and not getattr(d, "eof", False):
            if run.budget - got <= 0:
                return b"".join(parts), True, pos - start
            chunk = view[pos : min(end, pos + _STREAM_CHUNK)]
            piece = d.decompress(chunk, max(1, run.budget - got))  # type: ignore[attr-defined]
            parts.append(piece)
            got += len(piece)
            tail = getattr(d, "unconsumed_tail", b"") or b""
            if tail:  # the budget stopped it inside this chunk
                return b"".join(parts), True, pos - start + len(chunk) - len(tail)
            used = len(chunk) - len(getattr(d, "unused_data", b"") or b"")
            pos += used
    except (zlib.error, OSError, EOFError, lzma.LZMAError, ValueError):
        pass
    return b"".join(parts), False, pos - start


def _magic(
    encoding: Encoding, magic: re.Pattern[bytes], make: Callable[[], object]
) -> Callable[[bytes, _Run], _Decoded]:
    def decode(buf: bytes, run: _Run) -> _Decoded:
        for m in magic.finditer(buf):
            data, cut, _ = _stream(buf, m.start(), run, make)
            if data or cut:
                yield Layer(encoding, m.start()), data, cut

    return decode


_LOCAL = struct.Struct("<IHHHHHIIIHH")


def _zip_members(buf: bytes, run: _Run) -> _Decoded:
    """Every member of every zip local header in the bytes, found by its header (never by
    the central directory, which whoever wrote the file could make disagree)."""
    for m in re.finditer(rb"PK\x03\x04", buf):
        at = m.start()
        if at + _LOCAL.size > len(buf):
            continue
        _, _, flags, method, _, _, _, csize, _, nlen, xlen = _LOCAL.unpack_from(buf, at)
        name = buf[at + 30 : at + 30 + nlen].decode("utf-8", "replace")
        data_at = at + 30 + nlen + xlen
        layer = Layer(Encoding.ZIP, at, name)
        if method == 0:
            continue  # stored: its bytes are in the buffer, read as they are
        if flags & 1 or method != 8:
            why = "encrypted" if flags & 1 else f"compression method {method}"
            run.out.unread.append(Unread((layer,), Bound.UNSUPPORTED, why))
            continue
        known = csize not in (0, 0xFFFFFFFF) and not flags & 8
        data, cut, _ = _stream(
            buf, data_at, run, lambda: zlib.decompressobj(-15), csize if known else None
        )
        yield layer, data, cut


def _markup(buf: bytes) -> bytes:
    return re.sub(rb"<[^<>]{0,4096}>", b"", buf)


@dataclass(frozen=True)
class _Escape:
    """An escape syntax: where it shows (its trigger, looked for from the first byte
    ``first`` on), how far around one escape a token's escaped form can reach, and how
    to decode it (every other byte kept as it is)."""

    encoding: Encoding
    first: bytes
    trigger: re.Pattern[bytes]
    reach: int
    decode: Callable[[bytes], bytes]

    def spots(self, buf: bytes) -> Iterator[int]:
        pos = buf.find(self.first)
        if pos < 0:
            return
        for m in self.trigger.finditer(buf, pos):
            yield m.start()


# A token's escaped form is at most 33 characters of at most 10 bytes each (``&#0000101;``).
_REACH = 33 * 10
# In the order they are undone: markup first, so a ``<`` an escape decodes to is kept.
_ESCAPES = (
    # A token split by markup at every character, as a word processor may save it, spans
    # a few KiB of tags.
    _Escape(Encoding.MARKUP, b"<", re.compile(rb"</|/>"), 8 << 10, _markup),
    _Escape(Encoding.ENTITIES, b"&#", re.compile(rb"&#[xX0-9]"), _REACH, _entities),
    _Escape(
        Encoding.BACKSLASH,
        b"\\",
        re.compile(rb"\\(?:x[0-9a-fA-F]{2}|u00[0-9a-fA-F]{2})"),
        _REACH,
        _backslashes,
    ),
    _Escape(Encoding.PERCENT, b"%", re.compile(rb"%[0-9A-Fa-f]{2}"), _REACH, unquote_to_bytes),
    _Escape(
        Encoding.QUOTED_PRINTABLE,
        b"=",
        re.compile(rb"=(?:[0-9A-F]{2}|\r?\n)"),
        _REACH,
        binascii.a2b_qp,
    ),
)


# Past this many escapes in one buffer, the whole buffer is one stretch.
_MAX_SPOTS = 100_000


def _escape_spots(buf: bytes) -> list[tuple[int, int]] | None:
    """``(escape's index in _ESCAPES, offset)`` of every escape; None past `_MAX_SPOTS`."""
    if _PREFILTER is not None:
        return _PREFILTER.escapes(buf)
    found: list[tuple[int, int]] = []
    for i, esc in enumerate(_ESCAPES):
        found += [(i, at) for at in esc.spots(buf)]
        if len(found) > _MAX_SPOTS:
            return None
    return found


def _escapes(buf: bytes, run: _Run) -> _Decoded:
    """Every escape syntax the buffer shows, undone in one pass over the stretches around
    its escapes (a token half escaped in two syntaxes is whole after it): one layer per
    stretch, named by the syntaxes it undid."""
    spots = _escape_spots(buf)
    if spots is None:
        reach = [(0, len(buf), e.encoding) for e in _ESCAPES]
    else:
        reach = [
            (max(0, at - _ESCAPES[i].reach), at + _ESCAPES[i].reach, _ESCAPES[i].encoding)
            for i, at in spots
        ]
    reach.sort()
    stretches: list[tuple[int, int, set[Encoding]]] = []
    for lo, hi, encoding in reach:
        if stretches and lo <= stretches[-1][1]:
            last = stretches[-1]
            stretches[-1] = (last[0], max(last[1], hi), last[2] | {encoding})
        else:
            stretches.append((lo, min(hi, len(buf)), {encoding}))
    for lo, hi, seen in stretches:
        hi = min(hi, len(buf))
        used = tuple(e.encoding for e in _ESCAPES if e.encoding in seen)
        layer = Layer(used[0], lo, also=used[1:])
        if run.budget < hi - lo:
            yield layer, b"", True
            return
        out = buf[lo:hi]
        for esc in _ESCAPES:
            if esc.encoding in seen:
                out = esc.decode(out)
        if out != buf[lo:hi]:
            yield layer, out, False


_ESCAPED = frozenset(e.encoding for e in _ESCAPES)

_DECODERS: tuple[tuple[Encoding, Callable[[bytes, _Run], _Decoded]], ...] = (
    (Encoding.ZIP, _zip_members),
    (
        Encoding.GZIP,
        _magic(Encoding.GZIP, re.compile(rb"\x1f\x8b\x08"), lambda: zlib.decompressobj(31)),
    ),
    (Encoding.BZIP2, _magic(Encoding.BZIP2, re.compile(rb"BZh[1-9]1AY&SY"), bz2.BZ2Decompressor)),
    (Encoding.XZ, _magic(Encoding.XZ, re.compile(rb"\xfd7zXZ\x00"), lzma.LZMADecompressor)),
    (Encoding.BASE64, _alphabet_runs),  # and hex
    (Encoding.MARKUP, _escapes),  # every escape syntax of `_ESCAPES`
)

# The table's encodings, for the docs and the tests that hold one leak per form.
ENCODINGS: tuple[Encoding, ...] = (
    Encoding.CASE,
    Encoding.UTF16LE,
    Encoding.UTF16BE,
    *(e for e, _ in _DECODERS if e is not Encoding.MARKUP),
    Encoding.HEX,
    *(e.encoding for e in _ESCAPES),
)


def _scan(buf: bytes, layers: tuple[Layer, ...], run: _Run) -> None:
    if layers and not worth_decoding(buf):
        return  # decoded bytes with no token and nothing more to decode (most of them)
    _direct(buf, layers, run.out)
    for encoding, decode in _DECODERS:
        if encoding is Encoding.MARKUP and layers and layers[-1].encoding in _ESCAPED:
            continue  # the escapes were undone in one pass
        for layer, data, cut in decode(buf, run):
            here = (*layers, layer)
            if run.past():
                run.out.unread.append(Unread(here, Bound.DEADLINE, "not decoded by the deadline"))
                return
            run.charge(len(data))
            if cut:
                why = f"decoded {len(data)} bytes here before the budget ran out"
                run.out.unread.append(Unread(here, run.bound, why))
            if data and len(here) > MAX_DEPTH:
                why = f"layers nest deeper than {MAX_DEPTH}"
                run.out.unread.append(Unread(here, Bound.DEPTH, why))
            elif data:
                _scan(data, here, run)
            if run.budget <= 0:
                break  # one record per encoding says the budget kept it from the rest


def _never() -> float:
    return 0.0


def find_forms(
    data: bytes,
    budget: int,
    *,
    deadline: float | None = None,
    clock: Callable[[], float] = _never,
    bound: Bound = Bound.FILE_BYTES,
) -> Forms:
    """Every token in ``data`` in any form this module knows, decoding at most ``budget``
    bytes in all (``bound`` names that budget in what it leaves unread), stopping when
    ``clock()`` passes ``deadline``.

    The plain forms (any case, UTF-16) are always matched in ``data`` itself; only what
    must be decoded costs budget.
    """
    out = Forms()
    _scan(data, (), _Run(budget, deadline, clock, out, bound))
    return out


# What makes bytes worth `find_forms`'s time: a token in a loose form, or the start of an
# encoding a decoder takes apart. Hyperscan looks for all of them in one pass (a match
# ends the scan); without it every buffer is worth it.
_TRIGGERS: tuple[tuple[bytes, bool], ...] = (
    *((p, True) for p in LOOSE_PATTERNS),  # caseless
    (rb"PK\x03\x04", False),
    (rb"\x1f\x8b\x08", False),
    (rb"BZh[1-9]1AY&SY", False),
    (rb"\xfd7zXZ\x00", False),
    (rb"[A-Za-z0-9+/_\-\r\n]{%d}" % _B64_MIN, False),
    (rb"%[0-9A-Fa-f]{2}", False),
    (rb"=(?:[0-9A-F]{2}|\r?\n)", False),
    (rb"&#[xX0-9]", False),
    (rb"\\(?:x[0-9a-fA-F]{2}|u00[0-9a-fA-F]{2})", False),
    (rb"</|/>", False),
)


class _Prefilter:
    """One Hyperscan database of `_TRIGGERS`, compiled once (it takes a quarter of a
    second), with scratch space per thread (the scanner's threads are new every scan)."""

    def __init__(self) -> None:
        import hyperscan

        self._hs = hyperscan
        self._db: Any = None
        self._compiling = threading.Lock()
        self._local = threading.local()

    def _scratch(self) -> tuple[Any, Any]:
        if self._db is None:
            with self._compiling:
                if self._db is None:
                    hs = self._hs
                    db = hs.Database()
                    db.compile(
                        expressions=[p for p, _ in _TRIGGERS],
                        ids=list(range(len(_TRIGGERS))),
                        flags=[
                            hs.HS_FLAG_SINGLEMATCH | (hs.HS_FLAG_CASELESS if caseless else 0)
                            for _, caseless in _TRIGGERS
                        ],
                    )
                    self._db = db
        scratch = getattr(self._local, "scratch", None)
        if scratch is None:
            scratch = self._local.scratch = self._hs.Scratch(self._db)
        return self._db, scratch

    def any(self, buf: bytes | memoryview) -> bool:
        def stop(*_: object) -> bool:
            return True

        db, scratch = self._scratch()
        try:
            db.scan(buf, match_event_handler=stop, scratch=scratch)
        except self._hs.ScanTerminated:
            return True
        return False

    def escapes(self, buf: bytes) -> list[tuple[int, int]] | None:
        """Where the escapes of `_ESCAPES` end, by index; None past `_MAX_SPOTS`."""
        db, scratch = self._escape_db()
        found: list[tuple[int, int]] = []

        def on(i: int, _start: int, end: int, _flags: int, _ctx: object) -> bool:
            found.append((i, end))
            return len(found) > _MAX_SPOTS

        try:
            db.scan(buf, match_event_handler=on, scratch=scratch)
        except self._hs.ScanTerminated:
            return None
        return found

    def _escape_db(self) -> tuple[Any, Any]:
        if getattr(self, "_edb", None) is None:
            with self._compiling:
                if getattr(self, "_edb", None) is None:
                    db = self._hs.Database()
                    db.compile(
                        expressions=[e.trigger.pattern for e in _ESCAPES],
                        ids=list(range(len(_ESCAPES))),
                        flags=[0] * len(_ESCAPES),
                    )
                    self._edb = db
        scratch = getattr(self._local, "escape_scratch", None)
        if scratch is None:
            scratch = self._local.escape_scratch = self._hs.Scratch(self._edb)
        return self._edb, scratch


def _load_prefilter() -> _Prefilter | None:
    try:
        return _Prefilter()
    except ImportError:  # a platform without Hyperscan wheels: every buffer is looked at
        return None


_PREFILTER = _load_prefilter()


def worth_decoding(buf: bytes | memoryview) -> bool:
    """Whether ``buf`` may hold a token in a form `find_forms` finds and the strict
    scanner does not: a loose token or the start of an encoding (a cheap over-estimate;
    True where it cannot tell)."""
    return _PREFILTER is None or _PREFILTER.any(buf)
