"""OSWorld's metric functions, re-implemented as pure functions over plain data.

Each function keeps the exact semantics of the OSWorld metric of the same name: no
stripping, no case folding unless an option asks for it, fractional scores kept, and the
same argument order (``metric(result, expected, **options)`` or ``metric(result,
**options)``). Metrics that OSWorld gives a file path receive a `CachedFile` (or None)
instead, so none of them touches a disk. A metric that cannot make sense of its input
raises, exactly where OSWorld's would; the evaluator reports that as a checker error.
``tests/differential/osworld`` holds every one against OSWorld's own function (PyPI's
``desktop-env``); docs/verifiers/osworld-differences.md lists where they differ on purpose.
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

from cleanroom.verifiers.osworld.cached_file import CachedFile, NotText
from cleanroom.verifiers.osworld.value_rules import UnsupportedRule, match_value_to_rule

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
    """Every ``expect`` regex finds some line of the file and no line matches ``unexpect``.

    The lines are OSWorld's ``for line in file``: split at ``\\n`` only, each keeping its
    newline (so ``a\\s`` finds the line ``a``, and a form feed does not end a line).
    """
    if result is None:
        return 0.0
    expect = [re.compile(p) for p in rules.get("expect", [])]
    unexpect = [re.compile(p) for p in rules.get("unexpect", [])]
    lines = list(io.StringIO(_file_text(result)))
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


# Rule methods OSWorld has and cleanroom does not: a check using one cannot be scored.
_OSWORLD_ONLY_RULES = {"spreadsheet_range"}


def check_json(result: CachedFile | None, rules: dict[str, Any], is_yaml: bool = False) -> float:
    """Walk each rule's ``key`` path in a JSON (or YAML) file and test the value found.

    Every ``expect`` rule must hold (a key that is missing, or a step into something that
    is no container, is 0); no ``unexpect`` rule may hold (there such a path tests None).
    A file that does not parse, an empty YAML document, and any rule that raises are 0,
    as in OSWorld, which catches every exception here. The one exception that passes is a
    rule method OSWorld has and cleanroom lacks (``spreadsheet_range``): that is a rule
    cleanroom cannot score, not a 0.
    """
    if result is None:
        return 0.0
    text = _file_text(result)
    document: Any
    try:
        if is_yaml:
            import yaml  # only YAML checks need it

            # OSWorld uses the safe loader too: a file's tags cannot run code.
            document = yaml.safe_load(text)
            if document is None:
                return 0.0
        else:
            document = json.loads(text)
    except Exception:
        return 0.0
    ok = True
    for rule in rules.get("expect", {}):
        ok = ok and _json_rule_holds(document, rule, expected=True)
    for rule in rules.get("unexpect", {}):
        ok = ok and _json_rule_holds(document, rule, expected=False)
    return float(ok)


def _json_rule_holds(document: Any, rule: dict[str, Any], *, expected: bool) -> bool:
    """Whether one of `check_json`'s rules holds for ``document``: an ``expect`` rule
    (``expected``) matches the value at its key path, which must be there; an
    ``unexpect`` rule does not match it, a path that is not there testing None. A rule
    that raises does not hold, but for a rule method only OSWorld has."""
    try:
        value = document
        for key in rule["key"]:
            try:
                value = value[key]
            except (KeyError, TypeError):
                if expected:
                    return False
                value = None
                break
        return bool(match_value_to_rule(value, rule)) is expected
    except UnsupportedRule:
        if rule["method"] in _OSWORLD_ONLY_RULES:
            raise
        return False  # OSWorld's NotImplementedError, caught like the rest
    except Exception:
        return False


def check_direct_json_object(result: Any, rules: Any) -> float:
    """Compare a JSON object (or command output holding one) with ``rules["expected"]``.

    A string result is stripped, its single quotes become double quotes and it is parsed
    (a parse error raises, as in OSWorld). Without ``expect_in_result`` every expected
    key must be equal; with it, a list means one of its items must be the result's value
    (or be in it, when the value is a list) and a string must be a substring. Anything
    else that goes wrong (no ``expected``, a result that is no object, values that do
    not compare) is 0, as OSWorld catches it.
    """
    if isinstance(result, str):
        result = json.loads(result.strip().replace("'", '"'))
    if result is None:
        return 0.0
    try:
        expected = rules.get("expected", {})
        if expected:
            for want in expected.values():
                if want == "__EVALUATION_FAILED__":
                    return 0.0
    except Exception:
        return 0.0
    try:
        expected = rules["expected"]
        # .keys(): an expected value that is no object (an empty list) must raise, not pass.
        if not rules.get("expect_in_result", False):
            for key in expected.keys():  # noqa: SIM118
                want, got = expected.get(key), result.get(key)
                if expected.get("ignore_list_order", False):
                    want, got = sorted(want), sorted(got)
                if want != got:
                    return 0.0
            return 1.0
        for key in expected.keys():  # noqa: SIM118
            want, got = expected.get(key), result.get(key)
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

    ``strict`` (default true) off strips each line; ``ignore_case`` lowercases. Files are
    read as OSWorld's ``_safe_read_file`` reads them: UTF-8, and Latin-1 when that fails
    (so any bytes are text here), with universal newlines.
    """
    if result is None:
        return 0.0
    expected_files = expected if isinstance(expected, list) else [expected]
    ours = _normalised_lines(_csv_text(result), options)
    for candidate in expected_files:
        if ours == _normalised_lines(_csv_text(candidate), options):
            return 1.0
    return 0.0


def _csv_text(value: Any) -> str:
    if not isinstance(value, CachedFile):
        raise TypeError(f"expected a file from a file getter, got {type(value).__name__}")
    try:
        return value.text()
    except NotText:
        # OSWorld's next encoding; it decodes any bytes, so the ones after it never run.
        text = value.data.decode("latin-1")
        return text.replace("\r\n", "\n").replace("\r", "\n")


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
    """The image's width and height equal the rule's (a missing or null one is not tested).

    The image is opened with Pillow, as OSWorld opens it, so the same formats are images
    and the same files are not (Pillow's error then propagates). Where OSWorld measures
    the box of the non-transparent pixels instead of the whole canvas, so does this:
    with ``ignore_transparent`` and an RGBA or LA image, and for any image that declares
    a transparent colour (a palette or RGB PNG with a ``tRNS`` chunk, a GIF), whatever
    ``ignore_transparent`` says.
    """
    if src_path is None:
        return 0.0
    if not isinstance(src_path, CachedFile):
        raise TypeError(f"expected an image file, got {type(src_path).__name__}")
    from PIL import Image  # only image checks need it

    image: Image.Image = Image.open(io.BytesIO(src_path.data))
    ignore_transparent = rule.get("ignore_transparent", False)
    # OSWorld's condition, with its precedence: (ignore and RGBA/LA) or declared transparency.
    if (ignore_transparent and image.mode in ("RGBA", "LA")) or "transparency" in image.info:
        if image.mode != "RGBA":
            image = image.convert("RGBA")
        box = image.split()[-1].getbbox()
        width, height = (0, 0) if box is None else (box[2] - box[0], box[3] - box[1])
    else:
        width, height = image.size
    same_height = rule.get("height") is None or height == rule["height"]
    same_width = rule.get("width") is None or width == rule["width"]
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
