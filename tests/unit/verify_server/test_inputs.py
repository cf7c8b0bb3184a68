"""Request bodies are parsed exactly and validated field by field."""

from __future__ import annotations

from urllib.parse import quote_from_bytes, urlencode

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cleanroom.verify_server.errors import InvalidField, MalformedRequest
from cleanroom.verify_server.inputs import (
    MAX_FRAMES_PER_REPORT,
    form_token,
    is_urlencoded,
    parse_frames_report,
    parse_lease_request,
    parse_urlencoded,
    parse_window,
)

TOKEN = "env03-w001-r0007-9f8e7d6c"
GOOD = (
    b'{"env": "env03", "rollout_id": "env03-w001-r0007", "token": "env03-w001-r0007-9f8e7d6c",'
    b' "window": 1, "ttl_s": 600}'
)


@given(st.binary(max_size=300))
def test_urlencoded_values_decode_to_the_exact_bytes_that_were_encoded(raw: bytes) -> None:
    assert parse_urlencoded(b"token=" + quote_from_bytes(raw).encode()) == {"token": [raw]}


def test_plus_is_a_space_and_a_percent_escape_is_one_byte() -> None:
    assert parse_urlencoded(b"a=x+y%2B%00") == {"a": [b"x y+\x00"]}


def test_fields_keep_every_value_in_order() -> None:
    assert parse_urlencoded(urlencode([("a", "1"), ("b", "2"), ("a", "3")]).encode()) == {
        "a": [b"1", b"3"],
        "b": [b"2"],
    }


@pytest.mark.parametrize("body", [b"token=%", b"token=%4", b"token=%zz", b"%G0=1"])
def test_a_broken_percent_escape_is_malformed(body: bytes) -> None:
    with pytest.raises(MalformedRequest):
        parse_urlencoded(body)


def test_form_token_returns_only_the_token_field() -> None:
    assert form_token(b"env=env02&token=abc&lease=x") == b"abc"


def test_an_empty_token_is_a_valid_submission() -> None:
    assert form_token(b"token=") == b""


@pytest.mark.parametrize("body", [b"", b"name=x", b"token=a&token=b"])
def test_a_missing_or_repeated_token_field_is_invalid(body: bytes) -> None:
    with pytest.raises(InvalidField) as caught:
        form_token(body)
    assert caught.value.field == "token"


def test_a_token_that_is_not_utf8_is_malformed() -> None:
    with pytest.raises(MalformedRequest):
        form_token(b"token=%ff")


@pytest.mark.parametrize(
    ("content_type", "ok"),
    [
        ("application/x-www-form-urlencoded", True),
        ("application/x-www-form-urlencoded; charset=UTF-8", True),
        ("Application/X-WWW-Form-Urlencoded", True),
        ("multipart/form-data; boundary=x", False),
        ("application/json", False),
        (None, False),
    ],
)
def test_only_urlencoded_content_types_are_forms(content_type: str | None, ok: bool) -> None:
    assert is_urlencoded(content_type) is ok


def test_a_consistent_lease_request_is_accepted() -> None:
    req = parse_lease_request(GOOD)
    assert (req.env, req.rollout_id, req.token, req.window, req.ttl_s) == (
        "env03",
        "env03-w001-r0007",
        TOKEN,
        1,
        600.0,
    )


@pytest.mark.parametrize(
    ("replace", "field"),
    [
        (b'"env": "env03"', "env"),
        (b'"window": 1', "window"),
        (b'"ttl_s": 600', "ttl_s"),
    ],
)
def test_each_bad_lease_field_is_named(replace: bytes, field: str) -> None:
    bad = {"env": b'"env": "ENV03"', "window": b'"window": 1.0', "ttl_s": b'"ttl_s": NaN'}[field]
    with pytest.raises(InvalidField) as caught:
        parse_lease_request(GOOD.replace(replace, bad))
    assert caught.value.field == field


def test_a_token_from_another_rollout_is_refused() -> None:
    other = GOOD.replace(TOKEN.encode(), b"env03-w001-r0008-9f8e7d6c")
    with pytest.raises(InvalidField) as caught:
        parse_lease_request(other)
    assert caught.value.field == "token"


@pytest.mark.parametrize("n", [0, 1, MAX_FRAMES_PER_REPORT])
def test_frame_reports_within_bounds_are_accepted(n: int) -> None:
    assert parse_frames_report(f'{{"frames": {n}}}'.encode()) == n


@pytest.mark.parametrize(
    "body", [b'{"frames": -1}', b'{"frames": 1001}', b'{"frames": true}', b'{"frames": "3"}', b"{}"]
)
def test_frame_reports_out_of_bounds_are_invalid(body: bytes) -> None:
    with pytest.raises(InvalidField):
        parse_frames_report(body)


@pytest.mark.parametrize("body", [b"3", b"[]", b"{", b"\xff"])
def test_frame_reports_that_are_not_json_objects_are_malformed(body: bytes) -> None:
    with pytest.raises(MalformedRequest):
        parse_frames_report(body)


@pytest.mark.parametrize("value", [None, "", "-1", "1.0", "１", "1234567"])
def test_bad_audit_windows_are_invalid(value: str | None) -> None:
    with pytest.raises(InvalidField):
        parse_window(value)


def test_an_audit_window_is_a_plain_decimal() -> None:
    assert parse_window("007") == 7


@given(st.binary(max_size=60).filter(lambda raw: not {37, 38, 43} & set(raw)))  # no % & +
def test_a_lone_unescaped_token_field_reads_as_its_own_bytes(raw: bytes) -> None:
    body = b"token=" + raw
    assert parse_urlencoded(body) == {"token": [raw]}  # what the short cut must agree with
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        with pytest.raises(MalformedRequest):
            form_token(body)
    else:
        assert form_token(body) == raw
