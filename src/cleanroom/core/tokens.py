"""Rollout ids and tokens: every string a policy types names the environment it came from.

A rollout id is ``<env>-w<window>-r<seq>`` (``env03-w001-r0007``) and a token is the
rollout id followed by eight random lowercase hex digits (``env03-w001-r0007-9f8e7d6c``).
Tokens use only ``[a-z0-9-]`` so they survive XTest typing, shells, file names, form
fields and URL encoding unchanged, and the environment is part of the token itself, so
a token found anywhere (a document, a clipboard, a form row, a log line) is attributed
without a lookup.
"""

from __future__ import annotations

import multiprocessing
import os
import re
import secrets
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

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
_CHUNK = 8 << 20
PARALLEL_BYTES = 64 << 20  # below this a tree is scanned in the calling process
_PER_FILE_COST = 32 << 10  # a file's system calls cost about as much as reading 32 KiB


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


def _glued(buf: Buffer, start: int) -> bool:
    return start > 0 and buf[start - 1] in _WORD_BYTES


class _Hyperscan:
    """Candidate starts from Hyperscan (several GB/s), one database and scratch per thread."""

    def __init__(self) -> None:
        import hyperscan

        self._hs = hyperscan
        self._local = threading.local()

    def _db(self) -> Any:
        db = getattr(self._local, "db", None)
        if db is None:
            db = self._hs.Database()
            db.compile(expressions=[_HS_PATTERN], ids=[0], flags=[self._hs.HS_FLAG_SOM_LEFTMOST])
            self._local.db = db
        return db

    def starts(self, buf: Buffer, pos: int) -> list[int]:
        found: list[int] = []

        def on_match(_id: int, start: int, _end: int, _flags: int, _ctx: object) -> None:
            found.append(pos + start)

        self._db().scan(memoryview(buf)[pos:], match_event_handler=on_match)
        return found


def _load_engine() -> _Hyperscan | None:
    if os.environ.get("CLEANROOM_TOKEN_ENGINE", "") == "re":
        return None
    try:
        return _Hyperscan()
    except ImportError:  # a platform without Hyperscan wheels: the re engine alone is correct
        return None


_ENGINE = _load_engine()


def _matches(buf: Buffer, pos: int = 0) -> Iterator[re.Match[bytes]]:
    """Confirmed token matches in ``buf`` starting at or after ``pos``, in order."""
    if _ENGINE is None:
        for m in _SCAN_RE.finditer(buf, pos):
            if not _glued(buf, m.start()):
                yield m
        return
    for start in _ENGINE.starts(buf, pos):
        confirmed = _SCAN_RE.match(buf, start)
        if confirmed is not None and not _glued(buf, start):
            yield confirmed


def scan_bytes(data: Buffer, source: str = "<bytes>") -> list[TokenHit]:
    """Every token in a byte string, in order of appearance."""
    return [_hit(m, source, 0) for m in _matches(data)]


def scan_text(text: str, source: str = "<text>") -> list[TokenHit]:
    """Every token in a text string (offsets are in UTF-8 bytes)."""
    return scan_bytes(text.encode("utf-8", "surrogatepass"), source)


def scan_file(path: str | os.PathLike[str], *, chunk_size: int = _CHUNK) -> list[TokenHit]:
    """Every token in one file, read in large chunks so any size of file is fine.

    Consecutive chunks overlap by more than one token, and a match is reported only by
    the chunk in which it starts before the overlap, so a token straddling a boundary is
    found exactly once and the look-around at either end always sees real bytes.
    """
    source = os.fspath(path)
    with open(source, "rb", buffering=0) as fh:
        if os.fstat(fh.fileno()).st_size <= chunk_size:
            data = fh.read()
            if len(data) <= chunk_size:
                return scan_bytes(data, source)
            return _scan_stream(fh, source, data, chunk_size)
        return _scan_stream(fh, source, b"", chunk_size)


def _scan_stream(fh: BinaryIO, source: str, first: bytes, chunk_size: int) -> list[TokenHit]:
    hits: list[TokenHit] = []
    overlap = TOKEN_MAX_LEN + 1
    buf, base, pos = first, 0, 0  # buf[0] is at file offset base; scanning starts at pos
    while True:
        chunk = fh.read(chunk_size)
        if chunk:
            buf += chunk
        if not chunk:
            hits.extend(_hit(m, source, base) for m in _matches(buf, pos))
            return hits
        cut = max(len(buf) - overlap, pos)
        for m in _matches(buf, pos):
            if m.start() >= cut:
                break
            hits.append(_hit(m, source, base))
        keep = max(cut - 1, 0)  # one byte before the cut keeps the glued-word check honest
        buf, base, pos = buf[keep:], base + keep, cut - keep


@dataclass(frozen=True)
class ScanError:
    """A file or folder the scanner could not read or list, and why."""

    path: str
    reason: str
    # The entry was gone when the scanner reached it (running programs replace their
    # temporary files all the time): nothing in it can be read any more, by anyone.
    vanished: bool = False

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


def _scan_error(path: str, exc: OSError) -> ScanError:
    return ScanError(path, exc.strerror or str(exc), isinstance(exc, FileNotFoundError))


@dataclass
class TreeScan:
    """What a tree scan found, and every place in the tree it could not read.

    A scan is only as complete as its error list is empty: a caller that needs
    completeness turns `blind_spots` into `lost` rows for the rows that relied on the tree.
    """

    root: str
    hits: list[TokenHit]
    errors: list[ScanError]

    @property
    def blind_spots(self) -> list[ScanError]:
        """The errors that leave something unread: all but entries below the root that
        vanished (what vanished can hold no token any more). A missing root is blind."""
        return [e for e in self.errors if not e.vanished or e.path == self.root]


def _sized_files(root: str, errors: list[ScanError]) -> Iterator[tuple[str, int]]:
    """Every regular file under ``root`` with its size, never following symlinks; a folder
    that cannot be listed and an entry that cannot be examined go to ``errors``."""
    stack = [root]
    while stack:
        top = stack.pop()
        try:
            with os.scandir(top) as it:
                entries = list(it)  # a listing that fails half way is an error, not a cut
        except NotADirectoryError:
            try:
                yield top, os.stat(top).st_size
            except OSError as exc:
                errors.append(_scan_error(top, exc))
            continue
        except OSError as exc:
            errors.append(_scan_error(top, exc))
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                elif entry.is_file(follow_symlinks=False):
                    yield entry.path, entry.stat(follow_symlinks=False).st_size
            except OSError as exc:
                errors.append(_scan_error(entry.path, exc))


def _scan_many(paths: list[str]) -> tuple[list[TokenHit], list[ScanError]]:
    hits: list[TokenHit] = []
    errors: list[ScanError] = []
    for path in paths:
        try:
            hits.extend(scan_file(path))
        except OSError as exc:
            errors.append(_scan_error(path, exc))
    return hits, errors


def scan_tree(root: str | os.PathLike[str], *, workers: int | None = None) -> TreeScan:
    """Every token in every regular file under ``root``, in one pass, with every file
    that could not be read and every folder that could not be listed (permission denied,
    vanished mid-walk, a root that is missing) in the result's errors: nothing is
    skipped silently. A large tree is split across worker processes (``workers``, by
    default one per core once the tree passes `PARALLEL_BYTES`): reading and matching
    run at memory speed, so the per-file system calls are what a second core pays for.
    """
    top = os.fspath(root)
    errors: list[ScanError] = []
    files = list(_sized_files(top, errors))
    if workers is None:
        total = sum(size for _, size in files)
        workers = min(os.cpu_count() or 1, 4) if total >= PARALLEL_BYTES else 1
    if workers <= 1 or len(files) < 2 * workers:
        hits, errs = _scan_many([p for p, _ in files])
    else:
        hits, errs = _scan_parallel(files, workers)
    return TreeScan(top, hits, errors + errs)


def _scan_parallel(
    files: list[tuple[str, int]], workers: int
) -> tuple[list[TokenHit], list[ScanError]]:
    # Deal files largest first to the least-loaded worker, then put the hits back in walk order.
    order = {path: i for i, (path, _) in enumerate(files)}
    shares: list[list[str]] = [[] for _ in range(workers)]
    loads = [0] * workers
    for path, size in sorted(files, key=lambda f: -f[1]):
        k = loads.index(min(loads))
        shares[k].append(path)
        loads[k] += size + _PER_FILE_COST
    # fork, not spawn: a spawned worker would pay the interpreter start-up again.
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(workers) as pool:
        results = pool.map(_scan_many, shares)
    hits = [h for part, _ in results for h in part]
    hits.sort(key=lambda h: (order[h.source], h.offset))
    return hits, [e for _, part in results for e in part]
