"""The value rules OSWorld's JSON checkers apply."""

from __future__ import annotations

import pytest

from cleanroom.verifiers.osworld.image_size import UnknownImageFormat, image_size
from cleanroom.verifiers.osworld.value_rules import UnsupportedRule, match_value_to_rule


def test_re_method_searches_with_flags() -> None:
    assert match_value_to_rule("Hello World", {"method": "re.IGNORECASE", "ref": "world"})
    assert not match_value_to_rule("Hello World", {"method": "re", "ref": "world"})


def test_comparison_methods() -> None:
    assert match_value_to_rule(3, {"method": "lt", "ref": 4})
    assert not match_value_to_rule(3, {"method": "ne", "ref": 3})


def test_approx_method_tolerates_the_threshold() -> None:
    assert match_value_to_rule("1.05", {"method": "approx:0.1", "ref": 1.0})
    assert not match_value_to_rule("abc", {"method": "approx:0.1", "ref": 1.0})


def test_range_method_with_inclusive_and_exclusive_ends() -> None:
    assert match_value_to_rule(5, {"method": "range.te", "ref": [4, 5]})
    assert not match_value_to_rule(4, {"method": "range.te", "ref": [4, 5]})


def test_str_set_eq_splits_on_commas() -> None:
    assert match_value_to_rule("'b,a'", {"method": "str_set_eq", "ref": ["a", "b"]})


def test_unknown_method_is_a_named_error() -> None:
    with pytest.raises(UnsupportedRule):
        match_value_to_rule(1, {"method": "spreadsheet_range", "ref": []})


def test_image_size_of_gif_and_bmp_headers() -> None:
    assert image_size(b"GIF89a\x10\x00\x20\x00" + b"\x00" * 4) == (16, 32)
    bmp = b"BM" + b"\x00" * 16 + (7).to_bytes(4, "little") + (-9).to_bytes(4, "little", signed=True)
    assert image_size(bmp) == (7, 9)


def test_image_size_of_a_jpeg_frame_header() -> None:
    sof = b"\xff\xc0\x00\x11\x08" + (48).to_bytes(2, "big") + (64).to_bytes(2, "big") + b"\x00" * 10
    assert image_size(b"\xff\xd8\xff\xe0\x00\x04\x00\x00" + sof) == (64, 48)


def test_image_size_refuses_unknown_bytes() -> None:
    with pytest.raises(UnknownImageFormat):
        image_size(b"plain text")
