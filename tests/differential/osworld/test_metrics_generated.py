"""Every metric cleanroom implements against OSWorld's own, on generated inputs.

Generated values lean on what metrics get wrong: whitespace and trailing newlines, case
(with characters whose lower case is longer), line separators other than ``\\n``, text
that is not UTF-8, empty values and None, malformed JSON, YAML and CSV, and lists where a
string is expected. File metrics get the same bytes twice: as a file at a path for OSWorld
and as a `CachedFile` for cleanroom.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("desktop_env")

import yaml
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image

from cleanroom.verifiers.osworld import metrics as ours

from .reference import (
    EXAMPLES,
    Files,
    agree,
    call_cleanroom,
    call_osworld,
    osworld,
)

NOT_UTF8_TEXT = "text metrics: a result file that is not UTF-8"

# Characters that trip text handling: blanks and line breaks of every kind, quotes and JSON
# punctuation, case pairs, and letters whose lower case changes length (İ) or that fold.
ALPHABET = [
    *"aAbB ,:'\"{}[]01.-",
    "\t",
    "\n",
    "\r",
    "\r\n",
    "\x0b",
    "\x0c",
    "\x1c",
    "\x85",
    "\u2028",
    "é",
    "É",
    "ß",
    "İ",
    "\ufeff",
]
text = st.lists(st.sampled_from(ALPHABET), max_size=12).map("".join) | st.text(max_size=8)
words = st.sampled_from(["a", "b", "A", "ab", "a b", "x\n", "", " ", "é", "İ", "1", "true"])
# A file's bytes: mostly text in UTF-8, sometimes text in Latin-1 or any bytes.
file_bytes = st.one_of(
    text.map(lambda t: t.encode("utf-8")),
    text.map(lambda t: t.encode("latin-1", "replace")),
    st.binary(max_size=12),
)
values = st.one_of(
    st.none(),
    text,
    st.integers(-2, 2),
    st.lists(text, max_size=3),
    st.lists(text, max_size=3).map(tuple),
)


def both(name: str, *args: Any, **options: Any) -> tuple[Any, Any]:
    """cleanroom's and OSWorld's metric ``name`` on the same arguments."""
    return (
        call_cleanroom(ours.METRICS[name], *args, **options),
        call_osworld(osworld().metrics[name], *args, **options),
    )


def both_files(
    name: str, cleanroom_args: tuple[Any, ...], osworld_args: tuple[Any, ...], **options: Any
) -> tuple[Any, Any]:
    return (
        call_cleanroom(ours.METRICS[name], *cleanroom_args, **options),
        call_osworld(osworld().metrics[name], *osworld_args, **options),
    )


def is_utf8(data: bytes | None) -> bool:
    if data is None:
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def not_utf8_result(data: bytes | None, theirs: Any) -> str | None:
    """The name under which a text metric may differ: OSWorld raised reading the result."""
    return NOT_UTF8_TEXT if not is_utf8(data) and type(theirs).__name__ == "Raised" else None


# --- general.py ---------------------------------------------------------------------------


@EXAMPLES
@given(result=values, expected=values, rules_have_expected=st.booleans())
def test_exact_match(result: Any, expected: Any, rules_have_expected: bool) -> None:
    rules = {"expected": expected} if rules_have_expected else {}
    agree("exact_match", *both("exact_match", result, rules), (result, rules))


@EXAMPLES
@given(data=st.data(), result=st.none() | text)
def test_exact_match_near_misses(data: st.DataObject, result: str | None) -> None:
    base = result or "Directory exists.\n"
    expected = data.draw(
        st.sampled_from([base, base.rstrip("\n"), base + "\n", base.upper(), " " + base, ""])
    )
    rules = {"expected": expected}
    agree("exact_match", *both("exact_match", result, rules), (result, rules))


@EXAMPLES
@given(
    data=st.data(),
    result=st.none() | text,
    include=st.none() | st.lists(words, max_size=3) | words,
    exclude=st.none() | st.lists(words, max_size=3),
)
def test_check_include_exclude(
    data: st.DataObject, result: str | None, include: Any, exclude: Any
) -> None:
    if result and data.draw(st.booleans()):  # a part of the result, so inclusion happens
        start = data.draw(st.integers(0, len(result)))
        include = [result[start : start + data.draw(st.integers(0, 3))]]
    rules: dict[str, Any] = {}
    if include is not None:
        rules["include"] = include
    if exclude is not None:
        rules["exclude"] = exclude
    agree("check_include_exclude", *both("check_include_exclude", result, rules), (result, rules))


@EXAMPLES
@given(result=values, expected=values)
def test_match_in_list(result: Any, expected: Any) -> None:
    rules = {"expected": expected}
    agree("match_in_list", *both("match_in_list", result, rules), (result, rules))


@EXAMPLES
@given(result=values, expected=values)
def test_is_in_list(result: Any, expected: Any) -> None:
    rules = {"expected": expected}
    agree("is_in_list", *both("is_in_list", result, rules), (result, rules))


@EXAMPLES
@given(
    result=values,
    expected=values,
    kind=st.sampled_from([None, "str", "list", "dict"]),
    ignore_case=st.sampled_from([None, True, False]),
)
def test_literal_match(result: Any, expected: Any, kind: str | None, ignore_case: Any) -> None:
    options: dict[str, Any] = {}
    if kind is not None:
        options["type"] = kind
    if ignore_case is not None:
        options["ignore_case"] = ignore_case
    agree("literal_match", *both("literal_match", result, expected, **options), options)


@EXAMPLES
@given(result=st.none() | text | st.integers(0, 3), expected=st.none() | text)
def test_fuzzy_match(result: Any, expected: Any) -> None:
    rules = {"expected": expected}
    agree("fuzzy_match", *both("fuzzy_match", result, rules), (result, rules))


PATTERNS = st.sampled_from(
    ["a", "^a$", "a\\s", "\\s$", "\\n", "^$", "b+", "(?i)A", "\\x0c", "é", "a b", "^\\s*$", "["]
)


@EXAMPLES
@given(
    data=file_bytes | st.none(),
    expect=st.none() | st.lists(PATTERNS, max_size=3),
    unexpect=st.none() | st.lists(PATTERNS, max_size=2),
)
def test_check_list(files: Files, data: bytes | None, expect: Any, unexpect: Any) -> None:
    rules: dict[str, Any] = {}
    if expect is not None:
        rules["expect"] = expect
    if unexpect is not None:
        rules["unexpect"] = unexpect
    path, cached = files.pair(data)
    mine, theirs = both_files("check_list", (cached, rules), (path, rules))
    agree("check_list", mine, theirs, (data, rules), may_differ=not_utf8_result(data, theirs))


@EXAMPLES
@given(result=file_bytes | st.none(), expected=file_bytes | st.none())
def test_diff_text_file(files: Files, result: bytes | None, expected: bytes | None) -> None:
    (path_a, cached_a), (path_b, cached_b) = files.pair(result), files.pair(expected)
    mine, theirs = both_files("diff_text_file", (cached_a, cached_b), (path_a, path_b))
    differ = not_utf8_result(result, theirs)  # the result is read first, on both sides
    agree("diff_text_file", mine, theirs, (result, expected), may_differ=differ)


# JSON documents and the rules that walk them.
KEYS = st.sampled_from(["a", "b", "A", "", "0", "é"])
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(-3, 3, allow_nan=False),
    st.sampled_from(["a", "A", "a,b", "'a,b'", "1.5", "", " a "]),
)
DOCUMENTS = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
    max_leaves=8,
)
METHODS = st.sampled_from(
    [
        "eq",
        "ne",
        "lt",
        "le",
        "gt",
        "ge",
        "re",
        "re.IGNORECASE",
        "re.I.M",
        "approx:0.5",
        "approx",
        "range.te",
        "range.et",
        "range.tt",
        "range.xx",
        "range.",
        "str_list_eq",
        "str_set_eq",
        "no_such_method",
        "spreadsheet_range",
    ]
)
REFS = st.one_of(
    SCALARS,
    st.sampled_from(["^a$", "[", "a"]),
    st.lists(st.integers(-3, 3) | st.sampled_from(["a", "b"]), max_size=3),
)
RULES = st.fixed_dictionaries(
    {
        "key": st.lists(KEYS | st.integers(-1, 2), max_size=3),
        "method": METHODS,
        "ref": REFS,
    }
)


def _json_text(draw: Callable[..., Any]) -> bytes:
    document = draw(DOCUMENTS)
    text_form = draw(
        st.sampled_from(["json", "yaml", "truncated", "bom", "null", "empty", "bytes", "noise"])
    )
    if text_form == "json":
        return json.dumps(document, ensure_ascii=draw(st.booleans())).encode()
    if text_form == "yaml":
        return yaml.safe_dump(document, allow_unicode=True).encode()
    if text_form == "truncated":
        dumped = json.dumps(document)
        return dumped[: draw(st.integers(0, len(dumped)))].encode()
    if text_form == "bom":
        return b"\xef\xbb\xbf" + json.dumps(document).encode()
    if text_form == "null":
        return b"null"
    if text_form == "empty":
        return b""
    if text_form == "bytes":
        return draw(st.binary(max_size=10))
    return draw(text).encode()


@EXAMPLES
@given(
    draw=st.data(),
    is_yaml=st.sampled_from([None, True, False]),
    expect=st.none() | st.lists(RULES, max_size=3),
    unexpect=st.none() | st.lists(RULES, max_size=2),
    missing_file=st.integers(0, 20),
)
def test_check_json(
    files: Files,
    draw: st.DataObject,
    is_yaml: bool | None,
    expect: Any,
    unexpect: Any,
    missing_file: int,
) -> None:
    data = None if missing_file == 0 else _json_text(draw.draw)
    rules: dict[str, Any] = {}
    if expect is not None:
        rules["expect"] = expect
    if unexpect is not None:
        rules["unexpect"] = unexpect
    options = {} if is_yaml is None else {"is_yaml": is_yaml}
    path, cached = files.pair(data)
    mine, theirs = both_files("check_json", (cached, rules), (path, rules), **options)
    uses_spreadsheet = any(
        r["method"] == "spreadsheet_range" for r in (expect or []) + (unexpect or [])
    )
    differ = "check_json: the spreadsheet_range rule" if uses_spreadsheet else None
    agree("check_json", mine, theirs, (data, rules, options), may_differ=differ)


@EXAMPLES
@given(
    draw=st.data(),
    document=st.dictionaries(KEYS, SCALARS | st.lists(st.sampled_from(["a", "b", "c"])), max_size=3)
    | DOCUMENTS,
    as_text=st.sampled_from(["no", "json", "single quotes", "padded", "broken"]),
    expect_in_result=st.sampled_from([None, True, False, "yes"]),
    expected_form=st.sampled_from(["from result", "other", "failed", "missing", "list", "empty"]),
)
def test_check_direct_json_object(
    draw: st.DataObject,
    document: Any,
    as_text: str,
    expect_in_result: Any,
    expected_form: str,
) -> None:
    result: Any = document
    if as_text == "json":
        result = json.dumps(document)
    elif as_text == "single quotes":
        result = json.dumps(document).replace('"', "'")
    elif as_text == "padded":
        result = "\n " + json.dumps(document) + "\n"
    elif as_text == "broken":
        result = json.dumps(document)[:-1]
    rules: dict[str, Any] = {}
    if expected_form == "from result" and isinstance(document, dict):
        expected = {}
        for key, value in document.items():
            expected[key] = draw.draw(
                st.sampled_from(
                    [value, [value], ["zz", value], str(value), "a", [], value]
                    + ([sorted(value)] if isinstance(value, list) else [])
                )
            )
        if draw.draw(st.booleans()):
            expected["ignore_list_order"] = draw.draw(st.booleans())
        rules["expected"] = expected
    elif expected_form == "other":
        rules["expected"] = draw.draw(
            st.dictionaries(KEYS, SCALARS | st.lists(SCALARS), max_size=2)
        )
    elif expected_form == "failed":
        rules["expected"] = {"a": "__EVALUATION_FAILED__"}
    elif expected_form == "list":
        rules["expected"] = draw.draw(st.lists(KEYS, max_size=2))
    elif expected_form == "empty":
        rules["expected"] = draw.draw(st.sampled_from([{}, [], "", None]))
    if expect_in_result is not None:
        rules["expect_in_result"] = expect_in_result
    agree(
        "check_direct_json_object",
        *both("check_direct_json_object", result, rules),
        (result, rules),
    )


@EXAMPLES
@given(rules=st.sampled_from([[], "text", 3, None]), result=st.sampled_from(["{}", {"a": 1}]))
def test_check_direct_json_object_with_rules_of_the_wrong_shape(rules: Any, result: Any) -> None:
    agree("check_direct_json_object", *both("check_direct_json_object", result, rules), rules)


def _csv_bytes(draw: Callable[..., Any]) -> tuple[bytes, list[dict[str, str]]]:
    header = draw(
        st.lists(st.sampled_from(["name", "age", "a b", "é", ""]), min_size=1, max_size=3)
    )
    rows = draw(
        st.lists(
            st.lists(
                st.sampled_from(["ann", "3", "", " bob", "x,y", 'q"', "É"]), min_size=0, max_size=4
            ),
            max_size=4,
        )
    )
    out = io.StringIO(newline="")
    writer = csv.writer(out, lineterminator=draw(st.sampled_from(["\n", "\r\n", "\r"])))
    writer.writerow(header)
    writer.writerows(rows)
    encoding = draw(st.sampled_from(["utf-8", "utf-8", "latin-1"]))
    records = [dict(zip(header, row, strict=False)) for row in rows]
    return out.getvalue().encode(encoding, "replace"), records


@EXAMPLES
@given(draw=st.data(), missing=st.integers(0, 15))
def test_check_csv(files: Files, draw: st.DataObject, missing: int) -> None:
    csv_data, records = _csv_bytes(draw.draw)
    data: bytes | None = draw.draw(file_bytes) if draw.draw(st.booleans()) else csv_data
    if missing == 0:
        data = None
    record = st.sampled_from(records) if records else st.just({})
    pattern = record | st.dictionaries(
        st.sampled_from(["name", "age", "zz"]), st.sampled_from(["ann", "3", ""]), max_size=2
    )
    rules: dict[str, Any] = {}
    if draw.draw(st.booleans()):
        rules["expect"] = draw.draw(st.lists(pattern, max_size=2))
    if draw.draw(st.booleans()):
        rules["unexpect"] = draw.draw(st.lists(pattern, max_size=2))
    path, cached = files.pair(data)
    mine, theirs = both_files("check_csv", (cached, rules), (path, rules))
    agree("check_csv", mine, theirs, (data, rules), may_differ=not_utf8_result(data, theirs))


def _variant(draw: Callable[..., Any], data: bytes) -> bytes:
    """The same CSV slightly changed, or not, or in another encoding."""
    kind = draw(
        st.sampled_from(
            ["same", "crlf", "spaces", "upper", "latin-1", "bom", "other", "no newline", "blank"]
        )
    )
    text_form = data.decode("utf-8", "replace")
    if kind == "crlf":
        return data.replace(b"\n", b"\r\n")
    if kind == "spaces":
        return b"\n".join(b" " + line + b" \t" for line in data.split(b"\n"))
    if kind == "upper":
        return text_form.upper().encode()
    if kind == "latin-1":
        return text_form.encode("latin-1", "replace")
    if kind == "bom":
        return b"\xef\xbb\xbf" + data
    if kind == "other":
        return draw(file_bytes)
    if kind == "no newline":
        return data.rstrip(b"\n")
    if kind == "blank":
        return data + b"\n\n"
    return data


@EXAMPLES
@given(
    draw=st.data(),
    count=st.integers(0, 3),
    strict=st.sampled_from([None, True, False]),
    ignore_case=st.sampled_from([None, True, False]),
)
def test_compare_csv(
    files: Files, draw: st.DataObject, count: int, strict: Any, ignore_case: Any
) -> None:
    result, _ = _csv_bytes(draw.draw)
    if draw.draw(st.booleans()):
        result = draw.draw(file_bytes)
    candidates = [files.pair(_variant(draw.draw, result)) for _ in range(max(count, 1))]
    result_path, result_cached = files.pair(None if draw.draw(st.integers(0, 12)) == 0 else result)
    options: dict[str, Any] = {}
    if strict is not None:
        options["strict"] = strict
    if ignore_case is not None:
        options["ignore_case"] = ignore_case
    if count == 0:  # one file, not a list
        ours_expected: Any = candidates[0][1]
        theirs_expected: Any = candidates[0][0]
    else:
        ours_expected = [c for _, c in candidates]
        theirs_expected = [p for p, _ in candidates]
    mine, theirs = both_files(
        "compare_csv", (result_cached, ours_expected), (result_path, theirs_expected), **options
    )
    agree("compare_csv", mine, theirs, (result, options))


# --- vscode.py ------------------------------------------------------------------------------


@EXAMPLES
@given(
    draw=st.data(),
    ignore_blanks=st.sampled_from([None, True, False]),
    ignore_case=st.sampled_from([None, True, False]),
)
def test_compare_text_file(
    files: Files, draw: st.DataObject, ignore_blanks: Any, ignore_case: Any
) -> None:
    expected = draw.draw(file_bytes)
    actual = draw.draw(st.none() | st.just(_variant(draw.draw, expected)) | file_bytes)
    options: dict[str, Any] = {}
    if ignore_blanks is not None:
        options["ignore_blanks"] = ignore_blanks
    if ignore_case is not None:
        options["ignore_case"] = ignore_case
    (path_a, cached_a), (path_e, cached_e) = files.pair(actual), files.pair(expected)
    mine, theirs = both_files(
        "compare_text_file", (cached_a, cached_e), (path_a, path_e), **options
    )
    differ = not_utf8_result(actual, theirs)  # the result is read first, on both sides
    agree("compare_text_file", mine, theirs, (actual, expected, options), may_differ=differ)


@EXAMPLES
@given(draw=st.data(), expected=text)
def test_compare_config(files: Files, draw: st.DataObject, expected: str) -> None:
    actual = draw.draw(
        st.none()
        | st.sampled_from([expected, expected + "\n", expected.upper(), " " + expected]).map(
            str.encode
        )
        | file_bytes
    )
    rules = {"expected": expected}
    path, cached = files.pair(actual)
    mine, theirs = both_files("compare_config", (cached, rules), (path, rules))
    agree(
        "compare_config", mine, theirs, (actual, rules), may_differ=not_utf8_result(actual, theirs)
    )


@EXAMPLES
@given(
    listing=st.none() | text | st.lists(words, max_size=3),
    kind=st.sampled_from(["contain", "not_contain", "equal"]),
    expected=words,
)
def test_is_extension_installed(listing: Any, kind: str, expected: str) -> None:
    if isinstance(listing, str) and listing:
        listing = listing + "\nms-python.python\n" + expected
    rules = {"type": kind, "expected": expected}
    agree("is_extension_installed", *both("is_extension_installed", listing, rules), rules)


# --- basic_os.py ----------------------------------------------------------------------------


@EXAMPLES
@given(
    before=st.lists(text, max_size=4),
    zone=st.sampled_from(
        [
            "                Time zone: Etc/UTC (UTC, +0000)",
            "                Time zone: Europe/Paris (CET, +0100)",
            "Time zone: Atlantic/Faroe (WET, +0000) ",
            "+0000)",
            "",
        ]
    ),
    line_break=st.sampled_from(["\n", "\r\n"]),
    after=st.lists(text, max_size=2),
)
def test_is_utc_0(before: list[str], zone: str, line_break: str, after: list[str]) -> None:
    output = line_break.join([*before[:3], zone, *after])
    agree("is_utc_0", *both("is_utc_0", output), output)


APPS = st.lists(
    st.sampled_from(["google-chrome.desktop", "thunderbird.desktop", "vim.desktop", "a'b.desktop"]),
    max_size=4,
)
NOT_LITERAL = [
    "['google-chrome.desktop'] + ['thunderbird.desktop']",
    "list(('thunderbird.desktop', 'google-chrome.desktop'))",
    "['google-chrome.desktop', 'thunderbird.desktop'][::-1]",
    "rule['expected']",
]


@EXAMPLES
@given(
    apps=APPS,
    form=st.sampled_from(["repr", "gsettings", "empty", "not literal", "garbage", "tuple"]),
    expected=APPS,
    draw=st.data(),
)
def test_check_gnome_favorite_apps(
    apps: list[str], form: str, expected: list[str], draw: st.DataObject
) -> None:
    if form == "repr":
        output = repr(apps) + draw.draw(st.sampled_from(["", "\n", " \n"]))
    elif form == "gsettings":
        output = ("[" + ", ".join(f"'{a}'" for a in apps) + "]\n") if apps else "@as []\n"
    elif form == "empty":
        output = draw.draw(st.sampled_from(["", "\n", "[]", "  []"]))
    elif form == "tuple":
        output = repr(tuple(apps))
    elif form == "not literal":
        output = draw.draw(st.sampled_from(NOT_LITERAL))
    else:
        output = draw.draw(st.sampled_from(["[", "['a'", "None", "3", "'abc'", "{'a': 1}"]))
    if draw.draw(st.booleans()):
        expected = sorted(apps, reverse=True)
    rule = {"expected": expected}
    differ = None
    if output in NOT_LITERAL:
        differ = "check_gnome_favorite_apps: output that is no Python literal"
    agree(
        "check_gnome_favorite_apps",
        *both("check_gnome_favorite_apps", output, rule),
        (output, rule),
        may_differ=differ,
    )


@EXAMPLES
@given(
    names=st.lists(st.sampled_from(["a.jpg", "b.jpg", "c.png", ""]), max_size=4),
    expected=st.lists(st.sampled_from(["a.jpg", "b.jpg", "c.png"]), max_size=4),
    shape=st.sampled_from(["tree", "no children", "error"]),
)
def test_check_moved_jpgs(names: list[str], expected: list[str], shape: str) -> None:
    tree: dict[str, Any] = {"type": "directory", "name": "Desktop"}
    if shape == "tree":
        tree["children"] = [{"type": "file", "name": n} for n in names]
    elif shape == "error":
        tree = {"error": "No such file or directory"}
    rule = {"expected": expected}
    agree("check_moved_jpgs", *both("check_moved_jpgs", tree, rule), (tree, rule))


@EXAMPLES
@given(
    factor=st.sampled_from(
        ["1.0", "1.25\n", " 2 ", "0.5", "abc", "", "nan", "inf", "1e3", "1_0", "1,5", "1.0000001"]
    )
    | text
)
def test_check_text_enlarged(factor: str) -> None:
    agree("check_text_enlarged", *both("check_text_enlarged", factor), factor)


@EXAMPLES
@given(
    expected=words | st.lists(words, max_size=3) | st.none(),
    output=st.none() | text | st.sampled_from(["/home/user/Data3/List3/secret.docx\n"]),
)
def test_is_in_vm_clickboard(expected: Any, output: Any) -> None:
    config = {"expected": expected}
    agree("is_in_vm_clickboard", *both("is_in_vm_clickboard", config, output), (config, output))


# --- gimp.py --------------------------------------------------------------------------------


def _image(draw: Callable[..., Any]) -> tuple[bytes, tuple[int, int]]:
    """An image of some mode and format, often with transparent margins."""
    size = (draw(st.integers(1, 24)), draw(st.integers(1, 24)))
    mode = draw(st.sampled_from(["RGB", "RGBA", "LA", "L", "P", "P+tRNS", "RGB+tRNS", "1"]))
    fmt = draw(st.sampled_from(["PNG", "GIF", "BMP", "JPEG", "WEBP", "TIFF"]))
    base = mode.split("+")[0]
    image = Image.new("RGBA", size, (0, 0, 0, 0))
    box = (
        draw(st.integers(0, size[0] - 1)),
        draw(st.integers(0, size[1] - 1)),
    )
    end = (draw(st.integers(box[0] + 1, size[0])), draw(st.integers(box[1] + 1, size[1])))
    if draw(st.booleans()):
        image.paste((200, 30, 30, 255), (*box, *end))
    else:
        image.paste((200, 30, 30, 255), (0, 0, *size))
    converted = image.convert(base) if base != "P" else image.convert("RGB").convert("P")
    save: dict[str, Any] = {}
    if mode.endswith("+tRNS"):
        save["transparency"] = 0 if base == "P" else (0, 0, 0)
    if fmt == "JPEG" and converted.mode not in ("RGB", "L"):
        converted = converted.convert("RGB")
    if fmt == "BMP" and converted.mode in ("LA",):
        converted = converted.convert("RGBA")
    if fmt == "WEBP" and converted.mode not in ("RGB", "RGBA"):
        converted = converted.convert("RGBA")
    out = io.BytesIO()
    try:
        converted.save(out, fmt, **save)
    except (OSError, ValueError, KeyError):
        out = io.BytesIO()
        converted.convert("RGB").save(out, "PNG")
    return out.getvalue(), size


@EXAMPLES
@given(
    draw=st.data(),
    width=st.sampled_from(["same", "other", "null", "absent"]),
    height=st.sampled_from(["same", "other", "null", "absent"]),
    ignore_transparent=st.sampled_from([None, True, False]),
    content=st.sampled_from(["image", "image", "image", "none", "garbage", "truncated"]),
)
def test_check_image_size(
    files: Files,
    draw: st.DataObject,
    width: str,
    height: str,
    ignore_transparent: Any,
    content: str,
) -> None:
    data, size = _image(draw.draw)
    if content == "none":
        data_or_none: bytes | None = None
    elif content == "garbage":
        data_or_none = draw.draw(st.binary(max_size=30))
    elif content == "truncated":
        data_or_none = data[: draw.draw(st.integers(0, len(data)))]
    else:
        data_or_none = data
    rule: dict[str, Any] = {}
    for name, form, actual in (("width", width, size[0]), ("height", height, size[1])):
        if form == "same":
            rule[name] = actual
        elif form == "other":
            rule[name] = draw.draw(st.integers(0, 24))
        elif form == "null":
            rule[name] = None
    if ignore_transparent is not None:
        rule["ignore_transparent"] = ignore_transparent
    path, cached = files.pair(data_or_none, "image")
    mine, theirs = both_files("check_image_size", (cached, rule), (path, rule))
    agree("check_image_size", mine, theirs, (content, size, rule))


def test_every_metric_is_compared() -> None:
    """Each metric cleanroom registers has a test here; a new one needs one too."""
    tested = {
        name.removeprefix("test_")
        .removesuffix("_near_misses")
        .removesuffix("_with_rules_of_the_wrong_shape")
        for name in globals()
        if name.startswith("test_")
    }
    assert set(ours.METRICS) <= tested, set(ours.METRICS) - tested
