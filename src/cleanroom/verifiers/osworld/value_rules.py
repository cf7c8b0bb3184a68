"""Rules that compare one value with a reference, as OSWorld's JSON checkers use them.

A rule is ``{"method": ..., "ref": ...}``: ``re`` (optionally ``re.IGNORECASE`` and other
flag names joined by dots) searches, ``eq``/``ne``/``lt``/``le``/``gt``/``ge`` compare,
``approx:TH`` allows a numeric tolerance, ``range.XY`` tests ``ref[0] X value Y ref[1]``
(``t`` for less-than, ``e`` for less-or-equal), ``str_list_eq``/``str_set_eq`` split a
comma-separated string.
"""

from __future__ import annotations

import functools
import operator
import re
from typing import Any

_COMPARISONS = {"eq", "ne", "le", "lt", "ge", "gt"}


class UnsupportedRule(ValueError):
    """A rule uses a method cleanroom does not implement."""


def match_value_to_rule(value: Any, rule: dict[str, Any]) -> bool:
    """Whether ``value`` satisfies ``rule``, with OSWorld's exact semantics."""
    method: str = rule["method"]
    if method.startswith("re"):
        flags = (getattr(re, name) for name in method.split(".")[1:])
        flag = functools.reduce(operator.or_, flags, re.RegexFlag(0))
        return re.search(rule["ref"], value, flag) is not None
    if method in _COMPARISONS:
        return bool(getattr(operator, method)(value, rule["ref"]))
    if method.startswith("approx"):
        threshold = float(method.split(":")[1])
        try:
            number = float(value)
        except (ValueError, TypeError):
            return False
        return abs(number - rule["ref"]) <= threshold
    if method.startswith("range."):
        left = getattr(operator, "l" + method[6])
        right = getattr(operator, "l" + method[7])
        return bool(left(rule["ref"][0], value) and right(value, rule["ref"][1]))
    if method in {"str_list_eq", "str_set_eq"}:
        container = list if method == "str_list_eq" else set
        return bool(container(value.strip("\"'").split(",")) == container(rule["ref"]))
    raise UnsupportedRule(f"rule method {method!r} is not supported")
