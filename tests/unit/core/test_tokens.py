"""Tokens: minting, parsing, and finding them anywhere with their environment."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cleanroom.core import tokens
from cleanroom.core.tokens import RolloutId, TokenError


def test_mint_appends_eight_lowercase_hex_digits_to_the_rollout_id() -> None:
    token = tokens.mint("env03-w001-r0007")
    assert re.fullmatch(r"env03-w001-r0007-[0-9a-f]{8}", str(token))


def test_mint_gives_a_different_token_each_time() -> None:
    minted = {str(tokens.mint("env01-w001-r0001")) for _ in range(200)}
    assert len(minted) == 200


def test_parse_attributes_a_token_to_its_rollout_and_environment() -> None:
    token = tokens.parse("env12-w004-r0031-0a1b2c3d")
    assert token.env == "env12"
    assert token.rollout_id == "env12-w004-r0031"
    assert token.rollout == RolloutId("env12", 4, 31)
    assert token.nonce == "0a1b2c3d"


@pytest.mark.parametrize(
    "text",
    [
        "env12-w004-r0031-0A1B2C3D",  # upper-case hex
        "env12-w004-r0031-0a1b2c3",  # seven digits
        "env12-w004-r0031-0a1b2c3d ",  # trailing space
        "env1-w004-r0031-0a1b2c3d",  # one-digit environment
        "host01-w004-r0031-0a1b2c3d",
        "",
    ],
)
def test_parse_refuses_anything_but_exactly_one_token(text: str) -> None:
    with pytest.raises(TokenError):
        tokens.parse(text)


def test_rollout_id_refuses_a_bad_environment_name() -> None:
    with pytest.raises(TokenError):
        RolloutId("desk1", 1, 1)


def test_scan_finds_tokens_inside_text_with_offsets() -> None:
    a, b = "env01-w001-r0001-deadbeef", "env02-w001-r0002-0badf00d"
    data = f"typed {a} then pasted [{b}].\n".encode()
    hits = tokens.scan_bytes(data, "doc")
    assert [str(h.token) for h in hits] == [a, b]
    assert [h.env for h in hits] == ["env01", "env02"]
    assert data[hits[1].offset : hits[1].offset + len(b)] == b.encode()


@pytest.mark.parametrize(
    "text",
    [
        "xenv01-w001-r0001-deadbeef",  # glued to a word before it
        "env01-w001-r0001-deadbeef0",  # longer hex run: not this token
        "env01-w001-r0001-deadbee",
        "env01_w001_r0001_deadbeef",
    ],
)
def test_scan_ignores_lookalikes(text: str) -> None:
    assert tokens.scan_bytes(text.encode()) == []


@given(st.binary(max_size=400), st.binary(max_size=400))
def test_a_planted_token_is_always_found_whatever_surrounds_it(before: bytes, after: bytes) -> None:
    token = "env07-w003-r0042-00ff00ff"
    data = before + b"\n" + token.encode() + b"\n" + after
    assert token in [str(h.token) for h in tokens.scan_bytes(data)]


PIECES = [
    b"env01-w001-r0001-deadbeef",
    b"x",
    b"-",
    b" ",
    b"env",
    b"0",
    b"f",
    b"w001",
    b"a",
    b"env02-w123-r45678-0badf00d",
]


@given(st.lists(st.sampled_from(PIECES), max_size=40))
def test_the_fast_engine_and_the_plain_regex_agree(parts: list[bytes]) -> None:
    data = b"".join(parts)
    saved_min = tokens._HS_MIN_BYTES
    tokens._HS_MIN_BYTES = 0  # short inputs go to the plain regex unless told otherwise
    try:
        fast = tokens.scan_bytes(data)
    finally:
        tokens._HS_MIN_BYTES = saved_min
    saved = tokens._ENGINE
    tokens._ENGINE = None
    try:
        plain = tokens.scan_bytes(data)
    finally:
        tokens._ENGINE = saved
    assert fast == plain


def test_the_fast_engine_is_in_use_where_it_is_installed() -> None:
    assert tokens._ENGINE is not None


@given(st.lists(st.sampled_from(PIECES), max_size=40))
def test_found_tokens_names_what_scan_bytes_finds(parts: list[bytes]) -> None:
    data = b"".join(parts)
    expected = [(str(h.token), h.env) for h in tokens.scan_bytes(data)]
    assert tokens.found_tokens(data) == expected
