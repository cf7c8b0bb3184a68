"""Whatever bytes sit at the reward paths, the parser gives a reward in [0, 1] or `BadReward`.

Property-based: any other exception (RecursionError, OverflowError, ...) would surface as
a traceback, which a caller reads as exit 1, a valid 0.
"""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cleanroom.core.observed_file import FileKind, ObservedFile
from cleanroom.verifiers.container.decision.reward import BadReward, parse_reward

TXT = "/logs/verifier/reward.txt"
JSON = "/logs/verifier/reward.json"

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=20,
)


def observe(path: str, data: bytes) -> ObservedFile:
    return ObservedFile(path, FileKind.REGULAR, data, len(data))


def parses_or_refuses(json_file: ObservedFile, text_file: ObservedFile) -> None:
    try:
        reward = parse_reward(json_file, text_file)
    except BadReward as bad:
        assert bad.message
        assert isinstance(bad.shown, str)
        return
    assert reward is not None
    assert math.isfinite(reward.score) and 0.0 <= reward.score <= 1.0
    assert all(math.isfinite(v) for v in reward.metrics.values())
    assert reward.metric is None or reward.metrics[reward.metric] == reward.score


@settings(max_examples=400)
@given(st.binary(max_size=256))
def test_any_bytes_as_reward_txt_give_a_reward_or_bad_reward(data: bytes) -> None:
    parses_or_refuses(ObservedFile.missing(JSON), observe(TXT, data))


@settings(max_examples=400)
@given(st.binary(max_size=256))
def test_any_bytes_as_reward_json_give_a_reward_or_bad_reward(data: bytes) -> None:
    parses_or_refuses(observe(JSON, data), ObservedFile.missing(TXT))


@settings(max_examples=400)
@given(json_values)
def test_any_json_document_gives_a_reward_or_bad_reward(value: object) -> None:
    data = json.dumps(value, allow_nan=True).encode()
    parses_or_refuses(observe(JSON, data), ObservedFile.missing(TXT))


@settings(max_examples=200)
@given(st.dictionaries(st.text(max_size=6), json_values, max_size=4), json_values)
def test_any_object_with_a_reward_key_gives_a_reward_or_bad_reward(
    others: dict[str, object], reward: object
) -> None:
    data = json.dumps({**others, "reward": reward}, allow_nan=True).encode()
    parses_or_refuses(observe(JSON, data), ObservedFile.missing(TXT))


@pytest.mark.parametrize(
    "data",
    [
        b"[" * 30_000 + b"]" * 30_000,
        b'{"reward": ' + b'{"a": ' * 30_000 + b"1" + b"}" * 30_001,
        b'{"reward": 1' + b"0" * 400 + b"}",
        b'{"reward": 1, "extra": -1' + b"0" * 400 + b"}",
        b'{"reward": 1' + b"0" * 5000 + b"}",
    ],
    ids=["nested-30000", "nested-value", "int-1e400", "extra-int-1e400", "int-5000-digits"],
)
def test_the_red_teams_crash_inputs_are_bad_rewards(data: bytes) -> None:
    with pytest.raises(BadReward):
        parse_reward(observe(JSON, data), ObservedFile.missing(TXT))


def test_a_number_too_long_for_a_float_as_text_is_a_bad_reward() -> None:
    with pytest.raises(BadReward):
        parse_reward(ObservedFile.missing(JSON), observe(TXT, b"1" + b"0" * 400))
