"""OSWorld's metric functions, re-implemented as pure functions over plain data.

Each function keeps the exact semantics of the OSWorld metric of the same name: no
stripping, no case folding unless an option asks for it, fractional scores kept, and the
same argument order (``metric(result, expected, **options)`` or ``metric(result,
**options)``). Metrics that OSWorld gives a file path receive a `CachedFile` (or None)
instead, so none of them touches a disk. A metric that cannot make sense of its input
raises, exactly where OSWorld's would; the evaluator reports that as a checker error.
"""

from __future__ import annotations

import ast
import csv
import difflib
import io
import json
import re
from collections.abc import Callable, Iterable
from typing import Any

from rapidfuzz import fuzz

from cleanroom.verifiers.osworld.cached_file import CachedFile
from cleanroom.verifiers.osworld.image_size import image_size
from cleanroom.verifiers.osworld.value_rules import match_value_to_rule

Metric = Callable[..., float]


def _file_text(value: Any) -> str:
    if not isinstance(value, CachedFile):
        raise TypeError(f"expected a file from a file getter, got {type(value).__name__}")
    return value.text()


# --- general.py -------------------------------------------------------------------------


def exact_match(result: Any, rules: dict[str, Any]) -> float:
    """1 if ``result == rules["expected"]`` (no stripping: a trailing newline counts)."""
    return 1.0 if result == rules["expected"] else 0.0


def check_include_exclude(result: Any, rules: dict[str, Any]) -> float:
    """1 if every ``include`` string is in ``result`` and no ``exclude`` string is; None is 0."""
    if result is None:
        return 0.0
    include = rules.get("include", [])
    exclude = rules.get("exclude", [])
    ok = all(s in result for s in include) and all(s not in result for s in exclude)
    return 1.0 if ok else 0.0


def match_in_list(result: Any, rules: dict[str, Any]) -> float:
    """1 if ``result in rules["expected"]`` (membership for a list, substring for a str)."""
    return 1.0 if result in rules["expected"] else 0.0


def is_in_list(result: Any, rules: dict[str, Any]) -> float:
    """1 if ``rules["expected"] in result``: the operands the other way round."""
    return 1.0 if rules["expected"] in result else 0.0


def literal_match(result: Any, expected: Any, **options: Any) -> float:
    """Compare as strings (``type`` "str", the default) or element-wise as lists."""
    literal_type = options.get("type", "str")
    ignore_case = options.get("ignore_case", False)
    if literal_type == "str":
        a, b = str(result), str(expected)
        if ignore_case:
            a, b = a.lower(), b.lower()
        return float(a == b)
    if literal_type == "list":
        sequences = (list, tuple)
        if type(result) not in sequences or type(expected) not in sequences:
            return 0.0
        if len(result) != len(expected):
            return 0.0
        left = [str(s).lower() if ignore_case else str(s) for s in result]
        right = [str(s).lower() if ignore_case else str(s) for s in expected]
        return float(left == right)
    raise NotImplementedError(f"literal_match type {literal_type!r} is not supported")


def fuzzy_match(result: Any, rules: dict[str, Any]) -> float:
    """The rapidfuzz similarity ratio of ``result`` and ``rules["expected"]``, as a fraction."""
    return float(fuzz.ratio(result, rules["expected"]) / 100.0)


def check_list(result: CachedFile | None, rules: dict[str, Any]) -> float:
    """Every ``expect`` regex finds some line of the file and no line matches ``unexpect``."""
    if result is None:
        return 0.0
    lines = _file_text(result).splitlines()
    expect = [re.compile(p) for p in rules.get("expect", [])]
    unexpect = [re.compile(p) for p in rules.get("unexpect", [])]
    found = [any(p.search(line) for line in lines) for p in expect]
    clean = all(p.search(line) is None for line in lines for p in unexpect)
    return float(all(found) and clean)


def diff_text_file(result: CachedFile | None, expect: CachedFile) -> float:
    """The difflib similarity ratio of the two files' lines, a fraction; None is 0."""
    if result is None:
        return 0.0
    a = _file_text(result).splitlines()
    b = _file_text(expect).splitlines()
    return difflib.SequenceMatcher(a=a, b=b).ratio()


def check_json(result: CachedFile | None, rules: dict[str, Any], is_yaml: bool = False) -> float:
    """Walk each rule's ``key`` path in a JSON (or YAML) file and test the value found.

    Every ``expect`` rule must hold (a missing key is 0); no ``unexpect`` rule may hold
    (a missing key there tests None). A file that does not parse is 0.
    """
    if result is None:
        return 0.0
    text = _file_text(result)
    document: Any
    if is_yaml:
        import yaml  # only YAML checks need it

        try:
            # OSWorld uses the full loader; the safe one cannot run code from the file.
            document = yaml.safe_load(text)
        except yaml.YAMLError:
            return 0.0
    else:
        try:
            document = json.loads(text)
        except json.JSONDecodeError:
            return 0.0
    ok = True
    for rule in rules.get("expect", []):
        value = document
        for key in rule["key"]:
            try:
                value = value[key]
            except KeyError:
                return 0.0
        ok = ok and match_value_to_rule(value, rule)
    for rule in rules.get("unexpect", []):
        value = document
        for key in rule["key"]:
            try:
                value = value[key]
            except KeyError:
                value = None
                break
        ok = ok and not match_value_to_rule(value, rule)
    return float(ok)


def check_direct_json_object(result: Any, rules: dict[str, Any]) -> float:
    """Compare a JSON object (or command output holding one) with ``rules["expected"]``.

    A string result is stripped, its single quotes become double quotes and it is parsed
    (a parse error raises, as in OSWorld). Without ``expect_in_result`` every expected
    key must be equal; with it, a list means one of its items must be the result's value
    (or be in it, when the value is a list) and a string must be a substring.
    """
    if isinstance(result, str):
        result = json.loads(result.strip().replace("'", '"'))
    if result is None:
        return 0.0
    expected = rules.get("expected", {})
    if isinstance(expected, dict) and "__EVALUATION_FAILED__" in expected.values():
        return 0.0
    try:
        if not rules.get("expect_in_result", False):
            for key, want in expected.items():
                got = result.get(key)
                if expected.get("ignore_list_order", False):
                    want, got = sorted(want), sorted(got)
                if want != got:
                    return 0.0
            return 1.0
        for key, want in expected.items():
            got = result.get(key)
            if isinstance(want, list):
                hit = any(
                    (isinstance(got, list) and w in got) or (isinstance(got, str) and w == got)
                    for w in want
                )
                if not hit:
                    return 0.0
            elif isinstance(want, str):
                if want not in got:
                    return 0.0
            else:
                return 0.0
        return 1.0
    except Exception:  # OSWorld scores any mismatch in shape as 0
        return 0.0


def _match_record(pattern: dict[str, Any], row: dict[str, Any]) -> bool:
    return all(k in row and row[k] == v for k, v in pattern.items())


def check_csv(result: CachedFile | None, rules: dict[str, Any]) -> float:
    """Every ``expect`` record matches some row and no row matches an ``unexpect`` record."""
    if result is None:
        return 0.0
    expect = rules.get("expect", [])
    unexpect = rules.get("unexpect", [])
    found = [False] * len(expect)
    clean = True
    for row in csv.DictReader(io.StringIO(_file_text(result))):
        for i, pattern in enumerate(expect):
            found[i] = found[i] or _match_record(pattern, row)
        clean = clean and not any(_match_record(p, row) for p in unexpect)
    return float(all(found) and clean)


# --- table.py ---------------------------------------------------------------------------


def compare_csv(result: CachedFile | None, expected: Any, **options: Any) -> float:
    """1 if the result's lines equal those of the expected file (or of any of a list).

    ``strict`` (default true) off strips each line; ``ignore_case`` lowercases. OSWorld
    reuses a spent iterator when both a list of expected files and a relaxing option are
    given, so later files always compare against nothing; here each file gets a full
    comparison.
    """
    if result is None:
        return 0.0
    expected_files = expected if isinstance(expected, list) else [expected]
    ours = _normalised_lines(_file_text(result), options)
    for candidate in expected_files:
        if ours == _normalised_lines(_file_text(candidate), options):
            return 1.0
    return 0.0


def _normalised_lines(text: str, options: dict[str, Any]) -> list[str]:
    lines: Iterable[str] = text.splitlines()
    if not options.get("strict", True):
        lines = (line.strip() for line in lines)
    if options.get("ignore_case", False):
        lines = (line.lower() for line in lines)
    return list(lines)


# --- vscode.py --------------------------------------------------------------------------


def compare_text_file(actual: CachedFile | None, expected: CachedFile, **options: Any) -> float:
    """Whole-file equality; ``ignore_blanks`` collapses whitespace, ``ignore_case`` folds."""
    if not actual:
        return 0.0
    a, b = _file_text(actual), _file_text(expected)
    if options.get("ignore_blanks", False):
        a = re.sub(r"\s+", " ", re.sub(r"[\t\n]", " ", a).strip())
        b = re.sub(r"\s+", " ", re.sub(r"[\t\n]", " ", b).strip())
    if options.get("ignore_case", False):
        a, b = a.lower(), b.lower()
    return 1.0 if a == b else 0.0


def compare_config(actual: CachedFile | None, rules: dict[str, Any], **options: Any) -> float:
    """1 if the file's whole text equals ``rules["expected"]``."""
    if not actual:
        return 0.0
    return 1.0 if _file_text(actual) == rules["expected"] else 0.0


def is_extension_installed(actual: Any, rules: dict[str, Any], **options: Any) -> float:
    """Substring test of ``rules["expected"]`` in the listing (``contain``/``not_contain``)."""
    if rules["type"] == "contain":
        return 1.0 if rules["expected"] in actual else 0.0
    if rules["type"] == "not_contain":
        return 1.0 if rules["expected"] not in actual else 0.0
    raise NotImplementedError(f"is_extension_installed type {rules['type']!r}")


# --- basic_os.py ------------------------------------------------------------------------


def is_utc_0(timedatectl_output: str) -> float:
    """1 if the fourth line of ``timedatectl status`` output ends with ``+0000)``."""
    return 1.0 if timedatectl_output.split("\n")[3].endswith("+0000)") else 0.0


def check_gnome_favorite_apps(apps_str: str, rule: dict[str, Any]) -> float:
    """The gsettings favourites list, as a set, equals ``rule["expected"]`` (same length).

    OSWorld parses the output with ``eval()``, which would run any Python an agent managed
    to put there inside the verifier. ``ast.literal_eval`` accepts the same list literals
    and nothing that executes.
    """
    apps = ast.literal_eval(apps_str)
    expected = rule["expected"]
    if len(apps) != len(expected):
        return 0.0
    return 1.0 if set(apps) == set(expected) else 0.0


def check_moved_jpgs(directory_list: dict[str, Any], rule: dict[str, Any]) -> float:
    """The names of a directory tree's direct children, as a set, equal ``expected``."""
    names = [node["name"] for node in directory_list["children"]]
    expected = rule["expected"]
    if len(names) != len(expected):
        return 0.0
    return 1.0 if set(names) == set(expected) else 0.0


def check_text_enlarged(scaling_factor_str: str) -> float:
    """1 if the text scaling factor is above 1.0."""
    return 1.0 if float(scaling_factor_str) > 1.0 else 0.0


def is_in_vm_clickboard(config: dict[str, Any], terminal_output: Any) -> float:
    """The clipboard text contains ``expected`` (every item of it, when a list)."""
    expected = config["expected"]
    if not isinstance(expected, list):
        return 1.0 if expected in terminal_output else 0.0
    return 1.0 if all(item in terminal_output for item in expected) else 0.0


# --- gimp.py ----------------------------------------------------------------------------


def check_image_size(src_path: CachedFile | None, rule: dict[str, Any]) -> float:
    """The image's width and height equal the ones the rule gives (either may be absent)."""
    if src_path is None:
        return 0.0
    if not isinstance(src_path, CachedFile):
        raise TypeError(f"expected an image file, got {type(src_path).__name__}")
    width, height = image_size(src_path.data)
    same_height = "height" not in rule or height == rule["height"]
    same_width = "width" not in rule or width == rule["width"]
    return 1.0 if same_height and same_width else 0.0


METRICS: dict[str, Metric] = {
    f.__name__: f
    for f in (
        exact_match,
        check_include_exclude,
        match_in_list,
        is_in_list,
        literal_match,
        fuzzy_match,
        check_list,
        diff_text_file,
        check_json,
        check_direct_json_object,
        check_csv,
        compare_csv,
        compare_text_file,
        compare_config,
        is_extension_installed,
        is_utc_0,
        check_gnome_favorite_apps,
        check_moved_jpgs,
        check_text_enlarged,
        is_in_vm_clickboard,
        check_image_size,
    )
}
"""Every metric cleanroom implements, by its OSWorld name."""
