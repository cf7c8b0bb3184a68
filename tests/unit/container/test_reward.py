"""Rewards are parsed strictly: a finite number in [0, 1], or the rollout is invalid."""

from __future__ import annotations

import pytest

from cleanroom.verifiers.container.reward import (
    REWARD_CAP_BYTES,
    SHOWN_BYTES,
    BadReward,
    FileKind,
    RewardFile,
    parse_reward,
)

TXT = "/logs/verifier/reward.txt"
JSON = "/logs/verifier/reward.json"
NO_JSON = RewardFile.missing(JSON)
NO_TXT = RewardFile.missing(TXT)


def text(data: bytes) -> RewardFile:
    return RewardFile(TXT, FileKind.REGULAR, data, len(data))


def js(data: bytes) -> RewardFile:
    return RewardFile(JSON, FileKind.REGULAR, data, len(data))


@pytest.mark.parametrize(
    ("data", "score"),
    [(b"1", 1.0), (b"1\n", 1.0), (b"0", 0.0), (b"0.25\n", 0.25), (b"1.0", 1.0), (b"1e-05", 1e-05)],
)
def test_a_plain_number_in_the_unit_interval_is_the_score(data: bytes, score: float) -> None:
    reward = parse_reward(NO_JSON, text(data))

    assert reward is not None
    assert (reward.score, reward.source) == (score, TXT)


@pytest.mark.parametrize(
    "data",
    [
        b"nan",
        b"inf",
        b"-inf",
        b"1e9",
        b"-1",
        b" 1 ",
        b"1 ",
        b"\t1",
        b"1\n\n",
        b"1\r\n",
        b"+1",
        b"0x1",
        b"1,0",
        b"1.5",
        b"1e400",
        b"one",
        b"1\x00",
        b"\xff",
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


def test_json_keeps_other_numeric_keys_as_extras() -> None:
    reward = parse_reward(js(b'{"reward": 1, "tests_passed": 4}'), NO_TXT)

    assert reward is not None
    assert reward.extras == {"tests_passed": 4.0}


@pytest.mark.parametrize(
    "data",
    [
        b'{"reward": NaN}',
        b'{"reward": Infinity}',
        b'{"reward": 1e400}',
        b'{"reward": true}',
        b'{"reward": "1"}',
        b'{"reward": 2}',
        b'{"reward": -0.5}',
        b'{"reward": 0, "reward": 1}',
        b'{"score": 1}',
        b"[1]",
        b"1",
        b'{"reward": 1',
        b'{"reward": 1, "note": "ok"}',
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
    huge = RewardFile(TXT, FileKind.OVERSIZE, b"1\n" + b"\0" * 500, 1 << 30)

    with pytest.raises(BadReward, match=f"1073741824 bytes, over the {REWARD_CAP_BYTES}"):
        parse_reward(NO_JSON, huge)


def test_a_regular_file_over_the_cap_is_bad_even_if_the_reader_did_not_say_so() -> None:
    with pytest.raises(BadReward, match="over the"):
        parse_reward(NO_JSON, text(b"0" * (REWARD_CAP_BYTES + 1)))


def test_a_symlinked_reward_is_refused_naming_its_target() -> None:
    link = RewardFile(TXT, FileKind.SYMLINK, note="/etc/passwd")

    with pytest.raises(BadReward, match="symbolic link to /etc/passwd"):
        parse_reward(NO_JSON, link)


def test_a_fifo_reward_is_refused() -> None:
    fifo = RewardFile(TXT, FileKind.OTHER, note="fifo")

    with pytest.raises(BadReward, match=r"not a regular file \(fifo\)"):
        parse_reward(NO_JSON, fifo)


def test_offending_bytes_are_shown_escaped_and_truncated() -> None:
    with pytest.raises(BadReward) as caught:
        parse_reward(NO_JSON, text(b"\x1b[2J" + b"9" * 1000))

    assert len(caught.value.raw) == SHOWN_BYTES
    assert caught.value.shown.startswith("\\x1b[2J")
