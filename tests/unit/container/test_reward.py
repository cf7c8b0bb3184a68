"""Reward files have Harbor 0.25.0's meaning; a score that is not a finite number in [0, 1]
is refused (the rollout is invalid)."""

from __future__ import annotations

import json
import math

import pytest

from cleanroom.core.observed_file import FileKind, ObservedFile
from cleanroom.verifiers.container.decision.reward import (
    REWARD_CAP_BYTES,
    SHOWN_BYTES,
    BadReward,
    parse_reward,
)

TXT = "/logs/verifier/reward.txt"
JSON = "/logs/verifier/reward.json"
NO_JSON = ObservedFile.missing(JSON)
NO_TXT = ObservedFile.missing(TXT)


def text(data: bytes) -> ObservedFile:
    return ObservedFile(TXT, FileKind.REGULAR, data, len(data))


def js(data: bytes) -> ObservedFile:
    return ObservedFile(JSON, FileKind.REGULAR, data, len(data))


@pytest.mark.parametrize(
    ("data", "score"),
    [
        (b"1", 1.0),
        (b"1\n", 1.0),
        (b"0", 0.0),
        (b"0.25\n", 0.25),
        (b"1.0", 1.0),
        (b"1e-05", 1e-05),
        # Harbor reads the file with float(), which strips whitespace and takes a sign.
        (b"1\r\n", 1.0),
        (b" 1 ", 1.0),
        (b"\t0.5\n\n", 0.5),
        (b"+1", 1.0),
        (b"-0", 0.0),
        (b".5", 0.5),
    ],
)
def test_a_number_in_the_unit_interval_is_the_score(data: bytes, score: float) -> None:
    reward = parse_reward(NO_JSON, text(data))

    assert reward is not None
    assert (reward.score, reward.source) == (score, TXT)
    assert (reward.metric, reward.metrics) == ("reward", {"reward": score})


def test_minus_zero_is_scored_as_zero() -> None:
    reward = parse_reward(NO_JSON, text(b"-0.0"))

    assert reward is not None
    assert math.copysign(1.0, reward.score) == 1.0


@pytest.mark.parametrize(
    "data",
    [
        b"nan",
        b"inf",
        b"-inf",
        b"1e9",
        b"-1",
        b"1_0",
        b"0x1",
        b"1,0",
        b"1.5",
        b"1e400",
        b"one",
        b"1\x00",
        b"\xff",
        b"1 2",
    ],
)
def test_junk_text_is_a_bad_reward_carrying_the_bytes(data: bytes) -> None:
    with pytest.raises(BadReward) as caught:
        parse_reward(NO_JSON, text(data))

    assert caught.value.source == TXT
    assert caught.value.raw == data[:SHOWN_BYTES]


def test_an_empty_reward_file_is_bad_not_zero() -> None:
    with pytest.raises(BadReward, match="empty"):
        parse_reward(NO_JSON, text(b""))


def test_no_reward_file_at_all_is_none() -> None:
    assert parse_reward(NO_JSON, NO_TXT) is None


def test_json_wins_over_text_when_both_exist() -> None:
    reward = parse_reward(js(b'{"reward": 0.5}'), text(b"1\n"))

    assert reward is not None
    assert (reward.score, reward.source) == (0.5, JSON)


def test_json_keeps_every_metric_and_scores_the_reward_one() -> None:
    reward = parse_reward(js(b'{"reward": 1, "tests_passed": 4}'), NO_TXT)

    assert reward is not None
    assert (reward.score, reward.metric) == (1.0, "reward")
    assert reward.metrics == {"reward": 1.0, "tests_passed": 4.0}


def test_several_named_metrics_beside_the_reward_are_all_kept() -> None:
    data = b'{"accuracy": 0.75, "reward": 0.5, "tokens": 1234, "passed": 3}'

    reward = parse_reward(js(data), NO_TXT)

    assert reward is not None
    assert reward.score == 0.5
    assert reward.metrics == {"accuracy": 0.75, "reward": 0.5, "tokens": 1234.0, "passed": 3.0}


def test_a_lone_metric_without_a_reward_key_is_the_score() -> None:
    # Harbor's primary reward: ``reward``, else the only metric there is.
    reward = parse_reward(js(b'{"accuracy": 0.75}'), text(b"0\n"))

    assert reward is not None
    assert (reward.score, reward.metric, reward.metrics) == (0.75, "accuracy", {"accuracy": 0.75})


def test_a_lone_metric_out_of_the_unit_interval_is_a_bad_reward() -> None:
    with pytest.raises(BadReward, match=r"2\.0 is not a finite number in \[0, 1\]"):
        parse_reward(js(b'{"score": 2}'), NO_TXT)


@pytest.mark.parametrize(
    "data", [b'{"accuracy": 1, "f1": 1}', b'{"tokens": 9000, "passed": 12}', b"{}"]
)
def test_several_metrics_without_a_reward_key_have_no_single_reward_and_score_zero(
    data: bytes,
) -> None:
    reward = parse_reward(js(data), text(b"1\n"))

    assert reward is not None
    assert (reward.score, reward.metric, reward.source) == (0.0, None, JSON)
    assert reward.metrics == {k: float(v) for k, v in json.loads(data).items()}


def test_booleans_count_as_one_and_zero_as_in_harbor() -> None:
    reward = parse_reward(js(b'{"reward": true, "lint": false}'), NO_TXT)

    assert reward is not None
    assert (reward.score, reward.metrics) == (1.0, {"reward": 1.0, "lint": 0.0})


def test_a_duplicate_key_takes_its_last_value_as_json_loads_does() -> None:
    reward = parse_reward(js(b'{"reward": 0, "reward": 1}'), NO_TXT)

    assert reward is not None
    assert reward.score == 1.0


@pytest.mark.parametrize(
    "data",
    [
        b'{"reward": NaN}',
        b'{"reward": Infinity}',
        b'{"reward": 1e400}',
        b'{"reward": "1"}',
        b'{"reward": null}',
        b'{"reward": 2}',
        b'{"reward": -0.5}',
        b"[1]",
        b"1",
        b"null",
        b'{"reward": 1',
        # Harbor refuses a whole file with one value that is not a number.
        b'{"reward": 1, "note": "ok"}',
        b'{"reward": 1, "per_test": [1, 0]}',
        b'{"reward": 1, "detail": {"a": 1}}',
        b'{"reward": 1, "other": NaN}',
        b'{"reward": 1, "other": -1e400}',
        b'\xef\xbb\xbf{"reward": 1}',
        b"",
    ],
)
def test_json_of_the_wrong_shape_is_a_bad_reward(data: bytes) -> None:
    with pytest.raises(BadReward) as caught:
        parse_reward(js(data), text(b"0\n"))

    assert caught.value.source == JSON


def test_a_broken_json_is_never_skipped_for_the_text_file() -> None:
    with pytest.raises(BadReward):
        parse_reward(js(b"not json"), text(b"1\n"))


def test_an_oversize_reward_is_bad_and_shows_only_its_first_bytes() -> None:
    huge = ObservedFile(TXT, FileKind.OVERSIZE, b"1\n" + b"\0" * 500, 1 << 30)

    with pytest.raises(BadReward, match=f"1073741824 bytes, over the {REWARD_CAP_BYTES}"):
        parse_reward(NO_JSON, huge)


def test_a_regular_file_over_the_cap_is_bad_even_if_the_reader_did_not_say_so() -> None:
    with pytest.raises(BadReward, match="over the"):
        parse_reward(NO_JSON, text(b"0" * (REWARD_CAP_BYTES + 1)))


def test_a_symlinked_reward_is_refused_naming_its_target() -> None:
    link = ObservedFile(TXT, FileKind.SYMLINK, note="/etc/passwd")

    with pytest.raises(BadReward, match="symbolic link to /etc/passwd"):
        parse_reward(NO_JSON, link)


def test_a_fifo_reward_is_refused() -> None:
    fifo = ObservedFile(TXT, FileKind.OTHER, note="fifo")

    with pytest.raises(BadReward, match=r"not a regular file \(fifo\)"):
        parse_reward(NO_JSON, fifo)


def test_offending_bytes_are_shown_escaped_and_truncated() -> None:
    with pytest.raises(BadReward) as caught:
        parse_reward(NO_JSON, text(b"\x1b[2J" + b"9" * 1000))

    assert len(caught.value.raw) == SHOWN_BYTES
    assert caught.value.shown.startswith("\\x1b[2J")
