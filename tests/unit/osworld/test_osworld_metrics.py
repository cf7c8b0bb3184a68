"""OSWorld metrics keep OSWorld's exact semantics: no stripping, no case folding, fractions kept."""

from __future__ import annotations

import json
import struct
import zlib

import pytest

from cleanroom.verifiers.osworld import metrics as m
from cleanroom.verifiers.osworld.cached_file import CachedFile


def file(text: str | bytes, name: str = "f") -> CachedFile:
    data = text.encode() if isinstance(text, str) else text
    return CachedFile(f"/cache/{name}", data)


def png(width: int, height: int) -> bytes:
    """A complete RGB PNG (black): Pillow, which OSWorld's check reads it with, needs the
    pixel data as well as the header."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(kind + body))
        return struct.pack(">I", len(body)) + kind + body + crc

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"".join(b"\x00" + b"\x00" * 3 * width for _ in range(height)))
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


# exact_match
def test_exact_match_needs_the_trailing_newline() -> None:
    assert m.exact_match("Directory exists.", {"expected": "Directory exists.\n"}) == 0.0


def test_exact_match_passes_on_identical_output() -> None:
    assert m.exact_match("Directory exists.\n", {"expected": "Directory exists.\n"}) == 1.0


def test_exact_match_is_case_sensitive() -> None:
    assert m.exact_match("true\n", {"expected": "True\n"}) == 0.0


def test_exact_match_scores_none_as_zero() -> None:
    assert m.exact_match(None, {"expected": "x"}) == 0.0


# check_include_exclude
def test_include_exclude_with_none_result_is_zero() -> None:
    assert m.check_include_exclude(None, {"include": [], "exclude": []}) == 0.0


def test_include_exclude_with_empty_rules_passes_any_text() -> None:
    assert m.check_include_exclude("", {}) == 1.0


def test_include_exclude_needs_every_include() -> None:
    rules = {"include": ["a", "b"], "exclude": []}
    assert m.check_include_exclude("a only", rules) == 0.0
    assert m.check_include_exclude("a and b", rules) == 1.0


def test_include_exclude_fails_on_any_exclude() -> None:
    assert m.check_include_exclude("Error: x", {"include": [], "exclude": ["Error:"]}) == 0.0


def test_include_exclude_is_a_case_sensitive_substring_test() -> None:
    assert m.check_include_exclude("error: x", {"exclude": ["Error:"]}) == 1.0


# match_in_list / is_in_list
def test_match_in_list_is_membership_for_a_list() -> None:
    assert m.match_in_list("b", {"expected": ["a", "b"]}) == 1.0
    assert m.match_in_list("b\n", {"expected": ["a", "b"]}) == 0.0


def test_match_in_list_is_a_substring_test_for_a_string() -> None:
    assert m.match_in_list("ell", {"expected": "hello"}) == 1.0


def test_is_in_list_tests_expected_inside_result() -> None:
    assert m.is_in_list(["x", "y"], {"expected": "y"}) == 1.0
    assert m.is_in_list("xyz", {"expected": "q"}) == 0.0


def test_is_in_list_raises_on_none_like_osworld() -> None:
    with pytest.raises(TypeError):
        m.is_in_list(None, {"expected": "y"})


# literal_match
def test_literal_match_compares_as_strings() -> None:
    assert m.literal_match(1, "1") == 1.0
    assert m.literal_match("A", "a") == 0.0


def test_literal_match_ignore_case_option() -> None:
    assert m.literal_match("A", "a", ignore_case=True) == 1.0


def test_literal_match_list_type_compares_elementwise() -> None:
    assert m.literal_match([1, "b"], ["1", "b"], type="list") == 1.0
    assert m.literal_match([1], [1, 2], type="list") == 0.0
    assert m.literal_match("ab", ["a", "b"], type="list") == 0.0


# fuzzy_match
def test_fuzzy_match_returns_the_ratio_as_a_fraction() -> None:
    score = m.fuzzy_match("abcd", {"expected": "abce"})
    assert score == pytest.approx(0.75)


def test_fuzzy_match_identical_is_one() -> None:
    assert m.fuzzy_match("same", {"expected": "same"}) == 1.0


# check_list
def test_check_list_needs_each_expect_regex_on_some_line() -> None:
    f = file("alpha\nbeta 42\n")
    assert m.check_list(f, {"expect": [r"beta \d+", "^alpha$"]}) == 1.0
    assert m.check_list(f, {"expect": ["gamma"]}) == 0.0


def test_check_list_fails_when_a_line_matches_unexpect() -> None:
    assert m.check_list(file("ok\nbad line\n"), {"unexpect": ["bad"]}) == 0.0


def test_check_list_none_is_zero() -> None:
    assert m.check_list(None, {"expect": []}) == 0.0


# diff_text_file / compare_text_file
def test_diff_text_file_keeps_the_fraction() -> None:
    assert m.diff_text_file(file("a\nb\nc\nd\n"), file("a\nb\nx\ny\n")) == pytest.approx(0.5)


def test_diff_text_file_none_is_zero() -> None:
    assert m.diff_text_file(None, file("a")) == 0.0


def test_compare_text_file_is_whole_file_equality() -> None:
    assert m.compare_text_file(file("a b\n"), file("a b\n")) == 1.0
    assert m.compare_text_file(file("a b"), file("a b\n")) == 0.0


def test_compare_text_file_ignore_blanks_collapses_whitespace() -> None:
    assert m.compare_text_file(file("a\t b\n"), file(" a b"), ignore_blanks=True) == 1.0


def test_compare_text_file_ignore_case() -> None:
    assert m.compare_text_file(file("ABC"), file("abc"), ignore_case=True) == 1.0
    assert m.compare_text_file(file("ABC"), file("abc")) == 0.0


def test_compare_text_file_empty_actual_is_zero() -> None:
    assert m.compare_text_file(None, file("a")) == 0.0


# check_json
def test_check_json_walks_key_paths_and_applies_rules() -> None:
    doc = file(json.dumps({"a": {"b": "Hello"}, "n": 3}))
    rules = {
        "expect": [
            {"key": ["a", "b"], "method": "re.IGNORECASE", "ref": "^hello$"},
            {"key": ["n"], "method": "ge", "ref": 3},
        ]
    }
    assert m.check_json(doc, rules) == 1.0


def test_check_json_missing_expected_key_is_zero() -> None:
    assert m.check_json(file("{}"), {"expect": [{"key": ["x"], "method": "eq", "ref": 1}]}) == 0.0


def test_check_json_unexpect_rule_that_holds_is_zero() -> None:
    doc = file('{"x": 1}')
    assert m.check_json(doc, {"unexpect": [{"key": ["x"], "method": "eq", "ref": 1}]}) == 0.0


def test_check_json_unparsable_file_is_zero() -> None:
    assert m.check_json(file("{not json"), {"expect": []}) == 0.0


def test_check_json_reads_yaml_when_asked() -> None:
    doc = file("a: 2\n")
    rules = {"expect": [{"key": ["a"], "method": "approx:0.5", "ref": 2.2}]}
    assert m.check_json(doc, rules, is_yaml=True) == 1.0


# check_direct_json_object
def test_direct_json_parses_single_quoted_output() -> None:
    out = "{'a': 'x', 'b': 2}\n"
    assert m.check_direct_json_object(out, {"expected": {"a": "x", "b": 2}}) == 1.0


def test_direct_json_any_difference_is_zero() -> None:
    assert m.check_direct_json_object({"a": "y"}, {"expected": {"a": "x"}}) == 0.0


def test_direct_json_expect_in_result_list_means_one_of() -> None:
    rules = {"expected": {"h": ["Kili", "kili.jpg"]}, "expect_in_result": True}
    assert m.check_direct_json_object({"h": "kili.jpg"}, rules) == 1.0
    assert m.check_direct_json_object({"h": ["x", "Kili"]}, rules) == 1.0
    assert m.check_direct_json_object({"h": "other"}, rules) == 0.0


def test_direct_json_expect_in_result_string_is_substring() -> None:
    rules = {"expected": {"h": "ili"}, "expect_in_result": True}
    assert m.check_direct_json_object({"h": "Kilimanjaro"}, rules) == 1.0


def test_direct_json_invalid_text_raises_like_osworld() -> None:
    with pytest.raises(json.JSONDecodeError):
        m.check_direct_json_object("not json", {"expected": {}})


# is_extension_installed
def test_is_extension_installed_contain_and_not_contain() -> None:
    listing = "ms-python.python\nundefined_publisher.test\n"
    assert m.is_extension_installed(listing, {"type": "contain", "expected": "x.test"}) == 0.0
    rules = {"type": "contain", "expected": "undefined_publisher.test"}
    assert m.is_extension_installed(listing, rules) == 1.0
    rules = {"type": "not_contain", "expected": "ms-python.python"}
    assert m.is_extension_installed(listing, rules) == 0.0


# is_utc_0
TIMEDATECTL = (
    "               Local time: Thu 2024-01-25 12:56:06 UTC\n"
    "           Universal time: Thu 2024-01-25 12:56:06 UTC\n"
    "                 RTC time: Thu 2024-01-25 12:56:05\n"
    "                Time zone: Etc/UTC (UTC, +0000)\n"
    "System clock synchronized: yes\n"
)


def test_is_utc_0_reads_the_fourth_line() -> None:
    assert m.is_utc_0(TIMEDATECTL) == 1.0


def test_is_utc_0_other_offset_is_zero() -> None:
    assert m.is_utc_0(TIMEDATECTL.replace("+0000)", "+0100)")) == 0.0


# check_gnome_favorite_apps
def test_gnome_favorites_compare_as_sets_of_equal_length() -> None:
    rule = {"expected": ["google-chrome.desktop", "thunderbird.desktop"]}
    out = "['thunderbird.desktop', 'google-chrome.desktop']\n"
    assert m.check_gnome_favorite_apps(out, rule) == 1.0
    out3 = "['thunderbird.desktop', 'vim.desktop', 'google-chrome.desktop']\n"
    assert m.check_gnome_favorite_apps(out3, rule) == 0.0


def test_gnome_favorites_never_execute_the_output() -> None:
    with pytest.raises(ValueError):
        m.check_gnome_favorite_apps("__import__('os').system('true')", {"expected": []})


# check_moved_jpgs / check_text_enlarged / is_in_vm_clickboard
def test_check_moved_jpgs_compares_child_names() -> None:
    tree = {"type": "directory", "name": "d", "children": [{"name": "a.jpg"}, {"name": "b.jpg"}]}
    assert m.check_moved_jpgs(tree, {"expected": ["b.jpg", "a.jpg"]}) == 1.0
    assert m.check_moved_jpgs(tree, {"expected": ["a.jpg"]}) == 0.0


def test_check_text_enlarged_needs_factor_above_one() -> None:
    assert m.check_text_enlarged("1.25\n") == 1.0
    assert m.check_text_enlarged("1.0") == 0.0


def test_clipboard_contains_expected_text() -> None:
    rule = {"expected": "/home/user/Data3/List3/secret.docx"}
    assert m.is_in_vm_clickboard(rule, "/home/user/Data3/List3/secret.docx") == 1.0
    assert m.is_in_vm_clickboard({"expected": ["a", "b"]}, "a only") == 0.0


# compare_csv / check_csv
def test_compare_csv_matches_any_of_several_expected_files() -> None:
    ours = file("a,b\n1,2\n")
    assert m.compare_csv(ours, [file("x\n"), file("a,b\n1,2")]) == 1.0
    assert m.compare_csv(ours, file("a,b\n1,3\n")) == 0.0


def test_compare_csv_strict_keeps_spaces_unless_relaxed() -> None:
    assert m.compare_csv(file("a, b\n"), file("a, b \n")) == 0.0
    assert m.compare_csv(file("a, b\n"), file("a, b \n"), strict=False) == 1.0


def test_compare_csv_none_is_zero() -> None:
    assert m.compare_csv(None, file("x")) == 0.0


def test_check_csv_expect_and_unexpect_records() -> None:
    data = file("name,age\nann,3\nbob,4\n")
    assert m.check_csv(data, {"expect": [{"name": "bob", "age": "4"}]}) == 1.0
    assert m.check_csv(data, {"expect": [{"name": "cy"}]}) == 0.0
    assert m.check_csv(data, {"unexpect": [{"name": "ann"}]}) == 0.0


# compare_config / check_image_size
def test_compare_config_is_exact_text_equality() -> None:
    assert m.compare_config(file("project"), {"expected": "project"}) == 1.0
    assert m.compare_config(file("project\n"), {"expected": "project"}) == 0.0


def test_check_image_size_reads_png_dimensions() -> None:
    assert m.check_image_size(file(png(128, 128)), {"height": 128, "width": 128}) == 1.0
    assert m.check_image_size(file(png(128, 64)), {"height": 128, "width": 128}) == 0.0


def test_check_image_size_none_is_zero() -> None:
    assert m.check_image_size(None, {"height": 1}) == 0.0


def test_every_metric_named_in_the_spec_is_registered() -> None:
    wanted = {
        "exact_match", "check_include_exclude", "match_in_list", "is_in_list",
        "literal_match", "fuzzy_match", "check_list", "diff_text_file", "compare_text_file",
        "check_json", "check_direct_json_object", "is_extension_installed", "is_utc_0",
        "check_gnome_favorite_apps", "check_moved_jpgs", "check_text_enlarged",
        "is_in_vm_clickboard", "compare_csv", "check_csv", "compare_config", "check_image_size",
    }  # fmt: skip
    assert wanted <= set(m.METRICS)
