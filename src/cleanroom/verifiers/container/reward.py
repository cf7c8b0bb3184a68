"""Strict reward parsing: a reward is a finite number in [0, 1], or the rollout is invalid.

Readers (on the host in sealed mode, inside the container in the other modes) only
observe what is at the reward paths and hand a `RewardFile` here; this module alone
decides whether those bytes are a reward. ``reward.json`` wins over ``reward.txt`` when
it exists in any form, as in Harbor, so a planted or broken JSON file is never skipped in
favour of the text file.

Text: the whole file is one decimal number (``1``, ``0.25``, ``1e-05``) with at most one
trailing newline. ``nan``, ``inf``, ``1e9``, ``-1``, `` 1 `` and an empty file are all
refused. JSON: one object with a numeric ``"reward"``; NaN/Infinity literals, booleans and
duplicate keys are refused; other numeric keys are kept as extras.
"""

from __future__ import annotations

import json
import math
import re
import reprlib
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

REWARD_CAP_BYTES = 64 * 1024
SHOWN_BYTES = 256
_NUMBER_RE = re.compile(rb"\A(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?\n?\Z")


class FileKind(StrEnum):
    """What a reader found at a reward path."""

    MISSING = "missing"
    REGULAR = "regular"
    OVERSIZE = "oversize"  # a regular file over the size cap; ``data`` holds its first bytes
    SYMLINK = "symlink"  # refused by the host reader, which never follows links
    OTHER = "other"  # a FIFO, directory, device or socket; ``note`` says which


@dataclass(frozen=True)
class RewardFile:
    """One observation of one reward path, made without trusting what is there."""

    path: str
    kind: FileKind
    data: bytes = b""
    size: int | None = None
    note: str = ""

    @classmethod
    def missing(cls, path: str) -> RewardFile:
        return cls(path, FileKind.MISSING)


@dataclass(frozen=True)
class Reward:
    """A reward that passed every check, with the file it came from."""

    score: float
    source: str
    extras: dict[str, float] = field(default_factory=dict)


class BadReward(Exception):
    """A reward file exists but is not a reward; carries the offending bytes (truncated)."""

    def __init__(self, source: str, message: str, raw: bytes = b"") -> None:
        self.source = source
        self.message = message
        self.raw = raw[:SHOWN_BYTES]
        super().__init__(f"{source}: {message}")

    @property
    def shown(self) -> str:
        """The offending bytes as printable text (escaped), for details and reports."""
        text = self.raw.decode("utf-8", "backslashreplace")
        return text.encode("unicode_escape").decode("ascii")


def parse_reward(json_file: RewardFile, text_file: RewardFile) -> Reward | None:
    """The reward these observations hold, None when neither file exists, or `BadReward`."""
    if json_file.kind is not FileKind.MISSING:
        return _parse_json(_content(json_file), json_file.path)
    if text_file.kind is not FileKind.MISSING:
        return _parse_text(_content(text_file), text_file.path)
    return None


def _content(observed: RewardFile) -> bytes:
    if observed.kind is FileKind.REGULAR:
        if len(observed.data) > REWARD_CAP_BYTES:
            raise BadReward(observed.path, _oversize(len(observed.data)), observed.data)
        return observed.data
    if observed.kind is FileKind.OVERSIZE:
        size = observed.size if observed.size is not None else len(observed.data)
        raise BadReward(observed.path, _oversize(size), observed.data)
    if observed.kind is FileKind.SYMLINK:
        target = f" to {observed.note}" if observed.note else ""
        raise BadReward(observed.path, f"is a symbolic link{target}; links are not followed")
    what = observed.note or "not a regular file"
    raise BadReward(observed.path, f"is not a regular file ({what})")


def _oversize(size: int) -> str:
    return f"is {size} bytes, over the {REWARD_CAP_BYTES}-byte cap"


def _parse_text(data: bytes, source: str) -> Reward:
    if not data:
        raise BadReward(source, "is empty")
    if not _NUMBER_RE.match(data):
        raise BadReward(source, "is not one plain decimal number", data)
    return Reward(_in_unit_interval(float(data), source, data), source)


def _parse_json(data: bytes, source: str) -> Reward:
    if not data:
        raise BadReward(source, "is empty")
    try:
        value = json.loads(
            data.decode("utf-8"),
            parse_constant=_refuse_constant,
            object_pairs_hook=_refuse_duplicate_keys,
        )
    except (UnicodeDecodeError, ValueError) as exc:
        raise BadReward(source, f"is not valid JSON ({exc})", data) from exc
    except RecursionError as exc:
        raise BadReward(source, "is nested too deeply to be a reward", data) from exc
    if not isinstance(value, dict):
        raise BadReward(source, 'must be a JSON object like {"reward": 1.0}', data)
    if "reward" not in value:
        raise BadReward(source, 'has no "reward" key', data)
    numbers: dict[str, float] = {}
    for key, item in value.items():
        if isinstance(item, bool) or not isinstance(item, int | float):
            shown = reprlib.repr(item)
            raise BadReward(source, f"{reprlib.repr(key)} must be a number, got {shown}", data)
        try:
            numbers[key] = float(item)
        except OverflowError as exc:  # an integer too large for a float
            raise BadReward(source, f"{reprlib.repr(key)} is too large a number", data) from exc
    score = numbers.pop("reward")
    return Reward(_in_unit_interval(score, source, data), source, numbers)


def _in_unit_interval(score: float, source: str, data: bytes) -> float:
    if not math.isfinite(score) or not 0.0 <= score <= 1.0:
        raise BadReward(source, f"{score!r} is not a finite number in [0, 1]", data)
    return score


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number")


def _refuse_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, item in pairs:
        if key in seen:
            raise ValueError(f"duplicate key {key!r}")
        seen[key] = item
    return seen
