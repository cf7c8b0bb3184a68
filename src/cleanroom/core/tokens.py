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
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

ENV_PATTERN = r"env\d{2,3}"
ROLLOUT_PATTERN = rf"(?P<env>{ENV_PATTERN})-w(?P<window>\d{{3,6}})-r(?P<seq>\d{{4,8}})"
TOKEN_PATTERN = rf"(?P<rollout>{ROLLOUT_PATTERN})-(?P<nonce>[0-9a-f]{{8}})"

_ENV_RE = re.compile(rf"{ENV_PATTERN}\Z")
_ROLLOUT_RE = re.compile(rf"{ROLLOUT_PATTERN}\Z")
_TOKEN_RE = re.compile(rf"{TOKEN_PATTERN}\Z")
# A token embedded in other text: not glued to a longer word on either side.
_SCAN_RE = re.compile(rf"(?<![a-z0-9]){TOKEN_PATTERN}(?![0-9a-f])".encode())

TOKEN_MAX_LEN = len("env000-w000000-r00000000-00000000")
_CHUNK = 8 << 20


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


def scan_bytes(data: bytes | bytearray | memoryview, source: str = "<bytes>") -> list[TokenHit]:
    """Every token in a byte string, in order of appearance."""
    return [_hit(m, source, 0) for m in _SCAN_RE.finditer(data)]


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
                return [_hit(m, source, 0) for m in _SCAN_RE.finditer(data)]
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
            hits.extend(_hit(m, source, base) for m in _SCAN_RE.finditer(buf, pos))
            return hits
        cut = max(len(buf) - overlap, pos)
        for m in _SCAN_RE.finditer(buf, pos):
            if m.start() >= cut:
                break
            hits.append(_hit(m, source, base))
        keep = max(cut - 1, 0)  # one byte before the cut keeps the look-behind honest
        buf, base, pos = buf[keep:], base + keep, cut - keep


def iter_files(root: str | os.PathLike[str]) -> Iterator[str]:
    """Regular files under ``root`` (never following symlinks), depth first."""
    stack = [os.fspath(root)]
    while stack:
        top = stack.pop()
        try:
            with os.scandir(top) as it:
                for entry in it:
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
                    elif entry.is_file(follow_symlinks=False):
                        yield entry.path
        except NotADirectoryError:
            yield top
        except (PermissionError, FileNotFoundError):
            continue


def scan_tree(root: str | os.PathLike[str], errors: list[str] | None = None) -> list[TokenHit]:
    """Every token in every regular file under ``root``, in one pass.

    Files that vanish or cannot be read are listed in ``errors`` (when given) rather than
    silently skipped: a caller that needs completeness turns them into `lost` rows.
    """
    hits: list[TokenHit] = []
    for path in iter_files(root):
        try:
            hits.extend(scan_file(path))
        except OSError as exc:
            if errors is not None:
                errors.append(f"{path}: {exc.strerror or exc}")
    return hits


def scan_paths(paths: Iterable[str | os.PathLike[str]]) -> list[TokenHit]:
    """Scan several files or trees; a missing path raises `FileNotFoundError`."""
    hits: list[TokenHit] = []
    for p in paths:
        if Path(p).is_dir():
            hits.extend(scan_tree(p))
        else:
            hits.extend(scan_file(p))
    return hits
