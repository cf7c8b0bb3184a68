"""Reward files read with Harbor's meaning (releases 0.25 and 0.26), then checked: a reward
is a finite number in [0, 1], or the rollout is invalid.

Readers (on the host in sealed mode, through the Docker archive API in the other modes)
only observe what is at the reward paths and hand a `ObservedFile` here; this module alone
decides whether those bytes are a reward. ``reward.json`` wins over ``reward.txt`` when it
exists in any form, as in Harbor, so a planted or broken JSON file is never skipped in
favour of the text file.

Text, as Harbor's ``float(path.read_text())``: the UTF-8 text is one number as Python's
``float()`` reads it, so surrounding whitespace (``1\\r\\n``, `` 1 ``), a sign and digit
separators (``1_0``) are accepted. JSON, as Harbor's ``json.loads``: one object whose
values are all numbers (``true`` and ``false`` count as 1 and 0, as Harbor's result model
coerces them; a later duplicate key wins); a string, ``null``, list or object among the
values refuses the whole file, as Harbor does. Each value is a named metric and every
one is kept. The score is Harbor's primary reward: the ``reward`` metric, or the only
metric when there is just one. A file with several metrics and no ``reward`` (or none at
all) has no single reward: Harbor records no primary reward for such a trial and its mean
counts it as 0, so it scores 0, like a missing reward file, with every metric in the
details.

Cleanroom's own rules on top of Harbor's: the score must be a finite number in [0, 1]
(Harbor takes any finite number); every metric must be finite (as in Harbor) and fit a
float; an empty file, a file over the size cap, a link, a FIFO or a device is refused.
"""

from __future__ import annotations

import json
import math
import reprlib
from dataclasses import dataclass, field
from typing import Any

from cleanroom.core.observed_file import FileKind, ObservedFile

REWARD_CAP_BYTES = 64 * 1024
SHOWN_BYTES = 256
PRIMARY_METRIC = "reward"


@dataclass(frozen=True)
class Reward:
    """A reward that passed every check, with the file it came from.

    ``metrics`` holds every named metric of the file (``reward.txt`` has one, ``reward``);
    ``metric`` names the one that is the score, or is None when the file has no single
    reward and the score is 0.
    """

    score: float
    source: str
    metrics: dict[str, float] = field(default_factory=dict)
    metric: str | None = PRIMARY_METRIC


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


def parse_reward(json_file: ObservedFile, text_file: ObservedFile) -> Reward | None:
    """The reward these observations hold, None when neither file exists, or `BadReward`."""
    if json_file.kind is not FileKind.MISSING:
        return _parse_json(_content(json_file), json_file.path)
    if text_file.kind is not FileKind.MISSING:
        return _parse_text(_content(text_file), text_file.path)
    return None


def _content(observed: ObservedFile) -> bytes:
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
    try:
        value = float(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise BadReward(source, "is not one number", data) from exc
    score = _in_unit_interval(value, source, data)
    return Reward(score, source, {PRIMARY_METRIC: score})


def _parse_json(data: bytes, source: str) -> Reward:
    if not data:
        raise BadReward(source, "is empty")
    try:
        value = json.loads(data.decode("utf-8"), parse_constant=_refuse_constant)
    except (UnicodeDecodeError, ValueError) as exc:
        raise BadReward(source, f"is not valid JSON ({exc})", data) from exc
    except RecursionError as exc:
        raise BadReward(source, "is nested too deeply to be a reward", data) from exc
    if not isinstance(value, dict):
        raise BadReward(source, 'must be a JSON object like {"reward": 1.0}', data)
    metrics = {key: _metric(key, item, source, data) for key, item in value.items()}
    if PRIMARY_METRIC in metrics:
        metric: str | None = PRIMARY_METRIC
    elif len(metrics) == 1:
        metric = next(iter(metrics))
    else:
        return Reward(0.0, source, metrics, None)
    return Reward(_in_unit_interval(metrics[metric], source, data), source, metrics, metric)


def _metric(key: str, item: object, source: str, data: bytes) -> float:
    if not isinstance(item, int | float):  # bool is an int, as in Harbor
        raise BadReward(
            source, f"{reprlib.repr(key)} must be a number, got {reprlib.repr(item)}", data
        )
    try:
        number = float(item)
    except OverflowError as exc:  # an integer too large for a float
        raise BadReward(source, f"{reprlib.repr(key)} is too large a number", data) from exc
    if not math.isfinite(number):
        raise BadReward(source, f"{reprlib.repr(key)} is {number!r}, not a finite number", data)
    return number


def _in_unit_interval(score: float, source: str, data: bytes) -> float:
    if not math.isfinite(score) or not 0.0 <= score <= 1.0:
        raise BadReward(source, f"{score!r} is not a finite number in [0, 1]", data)
    return score + 0.0  # -0.0 is 0


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number")
