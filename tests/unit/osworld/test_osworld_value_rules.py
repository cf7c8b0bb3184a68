"""The value rules OSWorld's JSON checkers apply."""

from __future__ import annotations

import pytest

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
